"""The chat agent for `langgraph dev` (langgraph.json's `htam_chat`), beside the `htam` graph: Studio and Agent
Chat UI talk to it as to any messages-based graph. The server supplies the checkpointer.

The model comes from the settings (HTAM_MODEL, HTAM_BASE_URL, OPENAI_API_KEY). Without one the graph still
loads and answers every message with what to set, so the server starts either way.
"""

from __future__ import annotations

from typing import Any

from htam_agent.chat.agent import NO_MODEL, build_chat_agent, chat_model_from, help_text
from htam_agent.chat.runs import RunManager
from htam_agent.context import RunContext


def _no_model_graph() -> Any:
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(NO_MODEL.replace("start with --model NAME [--base-url URL]",
                                                        "set HTAM_MODEL [and HTAM_BASE_URL]")
                                       + "\n" + help_text() + "\n(run those with `htam chat`)")]}

    builder = StateGraph(MessagesState)
    builder.add_node("no_model", reply)
    builder.add_edge(START, "no_model")
    return builder.compile(name="htam_chat")


def make_graph(config: Any = None) -> Any:
    """A graph factory (langgraph-api calls it with the run's config)."""
    ctx = RunContext.from_env()
    model = chat_model_from(ctx)
    return _no_model_graph() if model is None else build_chat_agent(model, RunManager(ctx))
