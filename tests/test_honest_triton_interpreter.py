"""The bundled honest Triton candidates are correct, checked on the CPU with the Triton interpreter.

Each `triton_*.py` candidate of the tasks below runs in a subprocess with TRITON_INTERPRET=1, one for all of
the run's candidates (support/interpreter_batch.py; the variable
must be set before triton is imported, and other tests may already have imported it) on CPU tensors, at the
task's SMALL and ALT sizes, on the task's inputs and on x64 large-magnitude inputs. The same checks as the
cpp test: state_dict keys/shapes match, inputs untouched, fresh contiguous output, allclose(rtol=1e-4,
atol=1e-4 * rms). Run this file directly (`python tests/test_honest_triton_interpreter.py CANDIDATE`) to
check one candidate. By default the candidates of DEFAULT_LANE's tasks run; `-m exhaustive` runs the others.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from support.interpreter_batch import main, run_cases

TASKS = (
    "elementwise_leaky_relu",
    "reduction_row_sum",
    "norm_softmax",
    "norm_layernorm",
    "norm_rmsnorm",
    "matmul_square",
    "fused_gemm_bias_gelu",
    "fused_conv2d_bias_relu",
)
REPO = Path(__file__).resolve().parents[1]
# the default lane's sample, one task per kind of kernel (elementwise, row reduction, row statistics, a tl.dot
# GEMM with its epilogue); the other tasks' candidates are `exhaustive` (`python -m pytest -m exhaustive`)
DEFAULT_LANE = ("elementwise_leaky_relu", "reduction_row_sum", "norm_layernorm", "fused_gemm_bias_gelu")


def _candidates() -> list[Path]:
    from htam_agent.bundled_tasks import candidate_files

    return [p for stem in TASKS for p in candidate_files(stem, "triton")]


def _check(path: Path) -> None:
    """Runs in the subprocess, with TRITON_INTERPRET=1 already in the environment."""
    import torch

    from htam_agent.bundled_tasks import SUITE_DIR
    from htam_agent.evaluation.tasks import load_task

    stem = path.parent.name
    spec = importlib.util.spec_from_file_location(f"htam_triton_cand_{stem}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for size in ("small", "alt"):
        task = load_task(SUITE_DIR / f"{stem}.py", size=size)
        torch.manual_seed(0)
        ref = task.model_cls(*task.get_init_inputs())
        torch.manual_seed(0)
        new = module.ModelNew(*task.get_init_inputs())
        ref_sd, new_sd = ref.state_dict(), new.state_dict()
        assert list(ref_sd) == list(new_sd), f"state_dict keys {list(new_sd)} != {list(ref_sd)}"
        assert all(ref_sd[k].shape == new_sd[k].shape for k in ref_sd), "state_dict shapes differ"
        new.load_state_dict(ref_sd)
        for seed, dist in enumerate(("task", "large")):
            torch.manual_seed(seed)
            inputs = task.get_inputs()
            if dist == "large":
                inputs = [
                    x * 64.0 if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs
                ]
            pristine = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
            with torch.no_grad():
                expected = ref(*inputs)
                got = new(*inputs)
            where = f"{stem}/{path.name} size={size} dist={dist}"
            for a, b in zip(pristine, inputs, strict=True):
                if isinstance(a, torch.Tensor):
                    assert torch.equal(a, b), f"{where}: an input was modified"
            assert (
                isinstance(got, torch.Tensor) and got.shape == expected.shape and got.dtype == expected.dtype
            ), where
            assert got.is_contiguous(), f"{where}: output not contiguous"
            rms = expected.double().pow(2).mean().sqrt().item()
            err = (got - expected).abs().max().item()
            assert torch.allclose(got, expected, rtol=1e-4, atol=1e-4 * rms), (
                f"{where}: max abs err {err:.3g}, rms {rms:.3g}"
            )
            print(f"ok {where} max_abs_err={err:.3g}")


def test_every_task_has_a_triton_candidate():
    from htam_agent.bundled_tasks import candidate_files

    for stem in TASKS:
        assert candidate_files(stem, "triton"), f"{stem}: no triton candidate"


def _params() -> list:
    return [pytest.param(p, marks=[] if p.parent.name in DEFAULT_LANE else [pytest.mark.exhaustive])
            for p in _candidates()]


@pytest.fixture(scope="module")
def interpreted(request: pytest.FixtureRequest) -> dict[str, dict]:
    """Every selected candidate checked in one interpreter process (support/interpreter_batch.py)."""
    pytest.importorskip("triton", reason="triton is not installed (pip install 'htam-agent[triton]')")
    paths = [item.callspec.params["path"] for item in request.session.items
             if item.module is request.module and hasattr(item, "callspec")]
    return run_cases(__file__, {str(p): [str(p)] for p in paths}, timeout_s=600 * max(1, len(paths)))


@pytest.mark.slow  # not in the fast lane: 15-30 s each in the Triton interpreter
@pytest.mark.timeout(1800)  # the first case's setup checks all of the run's cases
@pytest.mark.parametrize("path", _params(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_triton_candidate_in_interpreter(interpreted: dict[str, dict], path: Path):
    error = interpreted[str(path)]["error"]
    assert not error, f"{path}:\n{error}"


if __name__ == "__main__":  # started with the repository on PYTHONPATH
    if sys.argv[1:2] == ["--batch"]:
        main(lambda p: _check(Path(p).resolve()))
        sys.exit(0)
    if os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("set TRITON_INTERPRET=1 (the interpreter runs the kernels on CPU tensors)")
    for arg in sys.argv[1:]:
        _check(Path(arg).resolve())
