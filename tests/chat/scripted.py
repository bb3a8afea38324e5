"""Pieces the chat tests share: the task, a scripted tool call, a wrong candidate, the session they talk to."""

from __future__ import annotations

from typing import Any

from htam_agent.bundled_tasks import CANDIDATES_DIR, SUITE_DIR
from htam_agent.chat.agent import ChatSession, chat_model_from
from htam_agent.chat.runs import RunManager
from htam_agent.context import RunContext

TASK = SUITE_DIR / "norm_rmsnorm.py"

# the honest OpenMP kernel with the weight left out: it compiles and runs, and computes the wrong thing
WRONG_RMSNORM = (CANDIDATES_DIR / "norm_rmsnorm" / "cpp_omp.py").read_text() \
    .replace("q[j] = p[j] * rinv * w[j];", "q[j] = p[j] * rinv;") \
    .replace('name="htam_norm_rmsnorm_cpp_omp"', 'name="htam_norm_rmsnorm_cpp_noweight"')
assert "rinv * w[j]" not in WRONG_RMSNORM


def call(name: str, **args: Any) -> dict[str, Any]:
    """A scripted reply that calls one tool."""
    return {"tool_calls": [{"name": name, "args": args}]}


def run_context(steps: int = 2) -> RunContext:
    """cpp backend, offline exemplar coder for the kernels, eager baseline only (torch.compile on a CPU
    compiles for a minute), every step run (no early stop near the roofline), no repairs (each is one more
    build), the test's folders from the environment."""
    return RunContext.from_env(backend="cpp", steps=steps, baselines=("eager",), coder="exemplar",
                               roofline_stop=10.0, max_repairs=0)


def session(url: str, steps: int = 2) -> ChatSession:
    ctx = run_context(steps)
    model = chat_model_from(ctx.with_(model="scripted-model", base_url=url, llm_retries=0, llm_timeout_s=30.0))
    return ChatSession(RunManager(ctx), model)
