"""The HTAM agent as a LangGraph graph.

    prepare -> analyze -> select_direction -> retrieve -> review --(Send x candidates)--> generate
        generate -> evaluate --(failed, repairs left: Send)--> generate
                            \\-> update_memory --(budget left)--> analyze
                                               \\-> finalize -> END

`builder` is exported uncompiled, so tests, the CLI and `langgraph dev` each choose their checkpointer;
`graph` is compiled without one for LangGraph Studio (langgraph.json). `compile_graph` is what the CLI uses.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from htam_agent.context import RunContext
from htam_agent.nodes.analyze import analyze
from htam_agent.nodes.evaluate import evaluate, route_after_evaluate
from htam_agent.nodes.finalize import finalize
from htam_agent.nodes.generate import generate
from htam_agent.nodes.prepare import prepare
from htam_agent.nodes.retrieve import retrieve
from htam_agent.nodes.review import fan_out, review
from htam_agent.nodes.select_direction import select_direction
from htam_agent.nodes.update_memory import route_after_update, update_memory
from htam_agent.state import AgentState


def make_builder() -> StateGraph:
    b = StateGraph(AgentState, context_schema=RunContext)
    b.add_node("prepare", prepare)
    b.add_node("analyze", analyze)
    b.add_node("select_direction", select_direction)
    b.add_node("retrieve", retrieve)
    b.add_node("review", review)
    b.add_node("generate", generate)
    b.add_node("evaluate", evaluate)
    b.add_node("update_memory", update_memory)
    b.add_node("finalize", finalize)
    b.add_edge(START, "prepare")
    b.add_edge("prepare", "analyze")
    b.add_edge("analyze", "select_direction")
    b.add_edge("select_direction", "retrieve")
    b.add_edge("retrieve", "review")
    b.add_conditional_edges("review", fan_out, ["generate", "finalize"])
    b.add_edge("generate", "evaluate")
    b.add_conditional_edges("evaluate", route_after_evaluate, ["generate", "update_memory"])
    b.add_conditional_edges("update_memory", route_after_update, ["analyze", "finalize"])
    b.add_edge("finalize", END)
    return b


builder = make_builder()
graph = builder.compile(name="htam-agent")


def compile_graph(checkpointer: Any = None, **kw: Any):
    """Compile `builder` with a checkpointer (e.g. SqliteSaver) for resumable runs."""
    return builder.compile(checkpointer=checkpointer, name="htam-agent", **kw)
