"""Run the agent: one optimization of one task, resumable, with progress events and a person in the loop.

`run_optimization` is what the CLI, the LangChain tool and the bench call. It compiles the graph with a SQLite
checkpointer inside the run's artifact folder (thread id = run id), so a run killed at any point continues
with `resume=True` from its last finished super-step: finished steps are not repeated (their candidates'
verdicts and their memory records are already saved).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from htam_agent.context import RunContext
from htam_agent.run.artifacts import RunArtifacts
from htam_agent.run.resources import Resources
from htam_agent.run.result import RunResult

log = logging.getLogger(__name__)

EventHandler = Callable[[dict[str, Any]], None]
InterruptHandler = Callable[[dict[str, Any]], Any]


class RunInterrupted(RuntimeError):
    """The graph paused for a person and no handler answered; resume with the run id."""

    def __init__(self, run_id: str, payload: dict[str, Any]) -> None:
        super().__init__(f"run {run_id} is waiting for a person at step {payload.get('step')}: resume it with "
                         f"`htam optimize --resume {run_id} --interactive` or Command(resume=...)")
        self.run_id = run_id
        self.payload = payload


def run_config(ctx: RunContext, run_id: str, task_name: str) -> dict[str, Any]:
    """LangGraph config: thread, recursion limit from the budgets, and LangSmith names, tags, metadata."""
    coder = "exemplar" if ctx.coder_kind == "exemplar" else (ctx.model or "llm")
    return {
        "configurable": {"thread_id": run_id},
        "recursion_limit": ctx.recursion_limit(),
        "run_name": f"htam optimize {task_name}",
        "tags": ["htam", ctx.backend, f"coder:{coder}", f"memory:{ctx.memory_mode}", *ctx.tags],
        "metadata": {"task": task_name, "backend": ctx.backend, "model": coder, "run_id": run_id,
                     "memory_mode": ctx.memory_mode, "steps": ctx.steps, "candidates": ctx.candidates},
    }


def _saver(path: Path) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False)
    return conn, SqliteSaver(conn)


def run_optimization(task_path: str | Path, ctx: RunContext | None = None, *, chat_model: Any = None,
                     memory: Any = None, evaluator: Any = None, coder: Any = None, run_id: str | None = None,
                     resume: bool = False, on_event: EventHandler | None = None,
                     on_interrupt: InterruptHandler | None = None) -> RunResult:
    """Optimize one task; returns the compact result (the artifact folder holds the rest).

    chat_model: any LangChain chat model (else one is built from ctx.model/base_url, or the exemplar coder
    runs when no model is configured). on_interrupt answers the review pauses of interactive runs; without
    it an interactive run raises RunInterrupted at its first pause (resume later with the run id).
    """
    from langgraph.types import Command

    from htam_agent.graph import compile_graph
    from htam_agent.run.artifacts import new_run_id

    ctx = ctx or RunContext.from_env()
    task_path = str(Path(task_path).expanduser().resolve())
    task_name = Path(task_path).stem
    if resume and not run_id:
        raise ValueError("resume needs the run id (the artifact folder's name)")
    run_id = run_id or new_run_id(task_name)
    ctx = ctx.with_(resources=Resources(chat_model=chat_model, memory=memory, evaluator=evaluator, coder=coder))
    art = RunArtifacts(ctx.runs_path(), run_id)
    if resume:
        info = art.read_run()
        task_path, task_name = info["task_path"], info["task_name"]
    line = memory_line(ctx)
    if line:
        art.event({"event": "memory", "line": line})
        if on_event:
            on_event({"event": "memory", "line": line})
    conn, saver = _saver(art.checkpoint_path)
    with closing(conn):
        graph = compile_graph(checkpointer=saver)
        config = run_config(ctx, run_id, task_name)
        if resume:
            snapshot = graph.get_state(config)
            if not snapshot.next and snapshot.values.get("stop_reason") and (art.root / "result.json").exists():
                return RunResult.from_dict(json.loads((art.root / "result.json").read_text()))
            inp: Any = None
            if snapshot.interrupts:
                inp = Command(resume=_answer(run_id, snapshot.interrupts[0].value, on_interrupt))
        else:
            inp = {"task_path": task_path, "run_id": run_id, "task_name": task_name}
        while True:
            pending = None
            for mode, chunk in graph.stream(inp, config, context=ctx, stream_mode=["custom", "updates"]):
                if mode == "custom":
                    art.event(chunk)
                    if on_event:
                        on_event(chunk)
                elif mode == "updates" and "__interrupt__" in chunk:
                    pending = chunk["__interrupt__"][0].value
            if pending is None:
                break
            art.event({"event": "interrupt", **pending})
            if on_event:
                on_event({"event": "interrupt", **pending})
            inp = Command(resume=_answer(run_id, pending, on_interrupt))
        if not ctx.keep_checkpoints and (art.root / "result.json").exists():
            prune_checkpoints(conn, run_id)
    return RunResult.from_dict(json.loads((art.root / "result.json").read_text()))


def memory_line(ctx: RunContext) -> str | None:
    """The run's one line on its memory: where its experience comes from (shipped with the package, the user's
    own); loads the shipped experience first when the memory has none of the user's own on this backend
    (memory/shipped.py). None without a memory. A memory that cannot be opened is left to the nodes' errors."""
    from htam_agent.memory.transitions import MemoryStoreError
    from htam_agent.run.resources import memory_for

    if not ctx.uses_memory:
        return None
    try:
        mem = memory_for(ctx)
        if mem is None:
            return None
        from htam_agent.memory.shipped import prepare

        return prepare(mem, ctx.backend, enabled=ctx.shipped_memory and ctx.learn)
    except MemoryStoreError as exc:
        log.warning("memory: %s", exc)
        return None


def prune_checkpoints(conn: sqlite3.Connection, thread_id: str) -> int:
    """Keep only the last checkpoint of a finished run: `resume` needs no more, and the earlier ones (the
    state after every super-step, candidate code included) were 2.0 of the 2.3 MB of a measured 6-step run.
    Returns the number of checkpoints removed; a checkpoint table of another layout is left as it is."""
    try:
        with conn:
            removed = 0
            for ns, last in conn.execute("SELECT checkpoint_ns, max(checkpoint_id) FROM checkpoints "
                                         "WHERE thread_id=? GROUP BY checkpoint_ns", (thread_id,)).fetchall():
                for table in ("writes", "checkpoints"):
                    cur = conn.execute(f"DELETE FROM {table} WHERE thread_id=? AND checkpoint_ns=? "
                                       "AND checkpoint_id<>?", (thread_id, ns, last))
                    removed += cur.rowcount if table == "checkpoints" else 0
        if removed:
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # give the space back to the file system now
        return removed
    except sqlite3.Error as exc:
        log.warning("left the checkpoints of %s as they are: %s", thread_id, exc)
        return 0


def _answer(run_id: str, payload: dict[str, Any], handler: InterruptHandler | None) -> Any:
    if handler is None:
        raise RunInterrupted(run_id, payload)
    return handler(payload)
