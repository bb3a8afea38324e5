"""The whole loop driven by the real ChatOpenAI client over HTTP, against a local scripted server.

Scripted replies: prose without code (asked again), a kernel that does not compile (repaired with the
compiler's message), its repair, a reply in the wrong backend (asked again), and a good kernel among several
code blocks. cpp backend: real compilation, timing, Chroma memory and SQLite checkpointer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_agent.agent import run_optimization
from htam_agent.bundled_tasks import CANDIDATES_DIR
from htam_agent.context import RunContext

from .scripted_coder import BROKEN_CPP, GOOD_SOFTMAX, softmax_task

pytestmark = pytest.mark.slow
TRITON_SOFTMAX = (CANDIDATES_DIR / "norm_softmax" / "triton_online.py").read_text()


def _block(code: str) -> str:
    return f"```python\n{code}\n```"


def test_scripted_llm_drives_the_loop(agent_env: Path, openai_server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCRIPTED_KEY", "sk-local-test")
    openai_server.push(
        "Softmax is memory-bound; I would fuse the passes. Let me think about it.",          # no code
        "Here is the kernel:\n" + _block(BROKEN_CPP),                                           # compile error
        "Fixed the stray line:\n" + _block(GOOD_SOFTMAX),                                       # repair
        "A Triton version:\n" + _block(TRITON_SOFTMAX),                                         # wrong backend
        "Usage:\n```bash\npython bench.py\n```\nKernel:\n" + _block(GOOD_SOFTMAX),              # good
    )
    ctx = RunContext.from_env(backend="cpp", steps=2, max_repairs=1, baselines=("eager",), model="scripted-model",
                              base_url=openai_server.url, api_key_env="SCRIPTED_KEY", llm_retries=1,
                              llm_timeout_s=30.0)
    result = run_optimization(softmax_task(), ctx)

    assert openai_server.remaining == 0
    reqs = openai_server.chat_requests
    assert len(reqs) == 5 and result.llm_calls == 5
    assert result.uses_llm and result.coder == "scripted-model"
    assert result.correct and [s["repairs"] for s in result.steps] == [1, 0]
    prompt_in, completion = openai_server.reported_usage()
    assert (result.input_tokens, result.output_tokens) == (prompt_in, completion) and prompt_in > 0

    first = json.dumps(reqs[0].messages)
    assert "class Model" in first and result.steps[0]["direction"] in first
    assert any(s in first for s in result.steps[0]["strategies"])
    assert "ModelNew" in json.dumps(reqs[1].messages[-1])            # asked again for code
    # the compiler's own message reached the model, in the quoted feedback (the template and the failed code
    # are elsewhere in the message, so a word they contain proves nothing)
    repair_user = reqs[2].messages[-1]["content"]
    feedback = repair_user.split("It failed the evaluator:", 1)[1].split("The failed candidate:", 1)[0]
    assert "compile_error" in feedback and "error:" in feedback and "this is not C++" in feedback, feedback
    assert "cpp" in json.dumps(reqs[4].messages[-1]).lower()         # told it answered in the wrong backend

    root = Path(result.artifact_dir)
    assert "Softmax is memory-bound" in (root / "step_00" / "cand_0_r0" / "reply.md").read_text()
    assert (root / "step_01" / "cand_0_r0" / "code.py").read_text().strip() == GOOD_SOFTMAX.strip()
    assert "LLM scripted-model" in (root / "best_kernel.py").read_text()
    assert "scripted-model" in (root / "report.md").read_text()
