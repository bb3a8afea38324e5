"""One traced LLMCoder call, in a fresh process (LangSmith's settings are read once per process).

    LANGSMITH_TRACING=true LANGSMITH_ENDPOINT=http://127.0.0.1:PORT LANGSMITH_API_KEY=dummy \
        PYTHONPATH=. python tests/support/trace_probe.py OPENAI_BASE_URL BACKEND

Writes the proposal as JSON on stdout after flushing the tracer's queue.
"""

from __future__ import annotations

import json
import sys

from langchain_core.tracers.langchain import wait_for_all_tracers

from htam_agent.coder.base import CodeRequest, StrategyBrief
from htam_agent.coder.llm import LLMCallRetries
from htam_agent.coder.llm_coder import LLMCoder
from htam_agent.context import RunContext


def main() -> None:
    base_url, backend = sys.argv[1], sys.argv[2]
    ctx = RunContext(model="scripted-model", base_url=base_url, backend=backend, llm_retries=0,
                     llm_timeout_s=10, tags=("probe",))
    request = CodeRequest(task_name="elementwise_leaky_relu", task_source="class Model: ...", backend=backend,
                          op_class="elementwise", direction="memory_access", direction_reason="memory-bound",
                          strategies=(StrategyBrief("vec16", "Vectorized 16-byte loads"),), step=3)
    coder = LLMCoder.from_context(ctx, retry=LLMCallRetries(retries=0))
    proposal = coder.propose(request)
    wait_for_all_tracers()
    print(json.dumps({"code": proposal.code, "error": proposal.error, "llm_calls": proposal.llm_calls}))


if __name__ == "__main__":
    main()
