"""Start a run: read and check the task, name the run, open its artifact folder."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from htam_agent.context import RunContext
from htam_agent.run.artifacts import RunArtifacts, new_run_id
from htam_agent.state import STATE_DEFAULTS, AgentState


def prepare(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    from htam_agent.evaluation.tasks import load_task_source

    ctx = runtime.context
    path = state.get("task_path")
    if not path:
        raise ValueError("the run's input needs 'task_path': a KernelBench-format task file")
    source = state.get("task_source") or Path(path).read_text()
    load_task_source(source, path, check_inputs=False)  # a malformed task fails here, naming the file
    name = state.get("task_name") or Path(path).stem
    run_id = state.get("run_id") or new_run_id(name)
    art = RunArtifacts(ctx.runs_path(), run_id)
    if not (art.root / "run.json").exists():
        art.write_run({"run_id": run_id, "task_path": str(path), "task_name": name, "started": time.time(),
                       "context": ctx.as_dict()})
    return {**STATE_DEFAULTS, "task_path": str(path), "task_source": source, "task_name": name, "run_id": run_id,
            "step": 0}
