"""The evaluator as LangChain tools (compile, verify, benchmark) for an outside agent, over one evaluation
gateway. The agent itself as a tool, `optimize_kernel`, lives next to the agent (`htam_agent.agent.tool`)."""
