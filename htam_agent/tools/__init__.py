"""LangChain tools over the evaluator (and the agent as a tool). Built by factories so each run's tools are
bound to its evaluator; importing this package is cheap."""
