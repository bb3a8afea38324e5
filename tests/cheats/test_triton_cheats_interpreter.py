"""The Triton cheats do what their docstrings say, checked on the CPU with the Triton interpreter.

The GPU verdicts need a GPU (test_cheats_gpu.py); this checks, without one, that each Triton cheat is
functional and misbehaves exactly where intended: the PyTorch-backed ones (10, 11) return right numbers,
so only the evaluator's kernel checks can turn them down; the hard-coded grid (12) is wrong only at the odd
shape; the no-max softmax (15) gives NaN only at large magnitudes; the honest look-alike is right
everywhere. (TF32 in tl.dot, pattern 14, is not emulated by the interpreter.) The run's candidates run in one
subprocess with TRITON_INTERPRET=1 set before triton is imported (support/interpreter_batch.py).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from support.interpreter_batch import main, run_cases

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.slow

# file -> (task, {(size, scale): "ok" | "wrong" | "nan"})
EXPECT = {
    "triton/t10_unused_kernel.py": ("norm_softmax", {}),
    "triton/t11_fallback.py": ("norm_softmax", {}),
    "triton/t12_no_mask.py": ("elementwise_leaky_relu", {("alt", 1.0): "wrong", ("alt", 64.0): "wrong"}),
    "triton/t15_softmax_no_max.py": ("norm_softmax", {("small", 64.0): "nan", ("alt", 64.0): "nan"}),
    "honest/triton_h01_softmax_row.py": ("norm_softmax", {}),
}


def _run(path: str, task: str) -> dict:
    import torch

    from htam_agent.bundled_tasks import SUITE_DIR
    from htam_agent.evaluation.tasks import load_task

    spec = importlib.util.spec_from_file_location("triton_cheat", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = {}
    for size in ("small", "alt"):
        t = load_task(SUITE_DIR / f"{task}.py", size=size)
        torch.manual_seed(0)
        ref = t.model_cls(*t.get_init_inputs())
        torch.manual_seed(0)
        cand = module.ModelNew(*t.get_init_inputs())
        for scale in (1.0, 64.0):
            torch.manual_seed(1)
            xs = [x * scale for x in t.get_inputs()]
            r, o = ref(*xs), cand(*[x.clone() for x in xs])
            if bool(o.isnan().any()):
                kind = "nan"
            else:
                rms = float(r.pow(2).mean().sqrt())
                kind = "ok" if bool(((o - r).abs() <= 1e-4 * (r.abs() + rms)).all()) else "wrong"
            results[f"{size} {scale}"] = kind
    return results


@pytest.fixture(scope="module")
def interpreted(request: pytest.FixtureRequest) -> dict[str, dict]:
    """Every selected cheat run in one interpreter process (support/interpreter_batch.py)."""
    pytest.importorskip("triton")
    files = [item.callspec.params["file"] for item in request.session.items
             if item.module is request.module and hasattr(item, "callspec")]
    return run_cases(__file__, {f: [str(HERE / f), EXPECT[f][0]] for f in files}, timeout_s=600 * max(1, len(files)))


@pytest.mark.timeout(1800)  # the first case's setup runs all of the run's cheats
@pytest.mark.parametrize("file", list(EXPECT), ids=lambda f: Path(f).stem)
def test_triton_cheat_behaves_as_designed(interpreted: dict[str, dict], file):
    _, expect = EXPECT[file]
    assert not interpreted[file]["error"], interpreted[file]["error"]
    got = interpreted[file]["value"]
    for size in ("small", "alt"):
        for scale in (1.0, 64.0):
            assert got[f"{size} {scale}"] == expect.get((size, scale), "ok"), (file, size, scale, got)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--batch"]:
        main(_run)
        sys.exit(0)
    print(json.dumps(_run(sys.argv[1], sys.argv[2])))
