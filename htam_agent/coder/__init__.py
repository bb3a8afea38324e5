"""Code generators ("coders") behind the agent's generation node: an LLM coder and the offline exemplar coder.

Both implement `Coder` from `htam_agent.coder.base`; the node does not care which one it has.
Nothing heavy is imported here.
"""
