"""Chat-driven optimization: a LangGraph chat agent (messages state) that optimizes, explains, steers and
resumes HTAM runs through tools, and the terminal front end `htam chat`.

Nothing here is imported by `import htam_agent`; the pieces load when a front end starts.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RunManager", "build_chat_agent", "make_chat_tools"]


def __getattr__(name: str) -> Any:  # lazy: langchain and the graph load only when asked for
    if name == "RunManager":
        from .runs import RunManager

        return RunManager
    if name == "build_chat_agent":
        from .agent import build_chat_agent

        return build_chat_agent
    if name == "make_chat_tools":
        from .tools import make_chat_tools

        return make_chat_tools
    raise AttributeError(name)
