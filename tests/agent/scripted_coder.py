"""A coder that answers from a script: real candidate sources, handed out in order, requests recorded.

It stands in for a model in tests of the graph's control flow (repairs, resume, interrupts); the tests of
the LLM path use the real ChatOpenAI client against a local scripted HTTP server instead.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from htam_agent.bundled_tasks import CANDIDATES_DIR
from htam_agent.coder.base import CodeProposal, CodeRequest

GOOD_SOFTMAX = (CANDIDATES_DIR / "norm_softmax" / "cpp_omp.py").read_text()
BROKEN_CPP = GOOD_SOFTMAX.replace("#include <torch/extension.h>", "#include <torch/extension.h>\nthis is not C++;")
assert BROKEN_CPP != GOOD_SOFTMAX


class ScriptedCoder:
    name = "scripted"
    uses_llm = False

    def __init__(self, codes: list[str | None], sleep_at_step: int | None = None, sleep_s: float = 0.0) -> None:
        self.codes = list(codes)
        self.requests: list[CodeRequest] = []
        self.sleep_at_step = sleep_at_step
        self.sleep_s = sleep_s

    def propose(self, request: CodeRequest) -> CodeProposal:
        self.requests.append(request)
        if self.sleep_at_step is not None and request.step == self.sleep_at_step:
            time.sleep(self.sleep_s)  # the test kills the process here
        code = self.codes.pop(0) if self.codes else GOOD_SOFTMAX
        return CodeProposal(code=code, coder=self.name, uses_llm=False, prompt=f"step {request.step}",
                            reply=f"pid {os.getpid()}", strategy_ids=[s.id for s in request.strategies],
                            error="" if code else "scripted: no code")


def softmax_task() -> Path:
    from htam_agent.bundled_tasks import SUITE_DIR

    return SUITE_DIR / "norm_softmax.py"
