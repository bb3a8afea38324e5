"""One traced run in a fresh process (langsmith reads its settings once per process): `trace_run.py URL`."""

from __future__ import annotations

import json
import sys

from htam_agent.agent import run_optimization
from htam_agent.context import RunContext
from tests.agent.scripted_coder import softmax_task

if __name__ == "__main__":
    ctx = RunContext.from_env(backend="cpp", steps=1, baselines=(), model="scripted-model", base_url=sys.argv[1],
                              api_key_env="TRACE_KEY", llm_retries=0, llm_timeout_s=30.0)
    result = run_optimization(softmax_task(), ctx)
    from langchain_core.tracers.langchain import wait_for_all_tracers

    wait_for_all_tracers()
    print(json.dumps({"correct": result.correct, "direction": result.steps[0]["direction"]}))
