"""Exemplar Triton candidates are correct, run on the CPU by the Triton interpreter (TRITON_INTERPRET=1).

A selection that covers every family and the main knob paths (masked tails, broadcast operands, grid-stride,
online/two-pass statistics, rows kept in registers, argmax ties, batched matmul). The run's cases run in
one subprocess (support/interpreter_batch.py; the variable must be set before triton is imported) at the
task's SMALL and ALT sizes, on the task's inputs and on x64 inputs, against the reference with rtol 1e-4 and
atol 1e-4 * rms. 15-60 s a case on two cores: the default run checks one case of each knob path
(DEFAULT_LANE), `-m exhaustive` the others.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from support.interpreter_batch import main, run_cases

REPO = Path(__file__).resolve().parents[2]

# (task, knobs the variant must have): the first enumerated variant with those knobs is checked
CASES = [
    ("elementwise_swish", {}),
    ("fused_conv2d_bias_relu", {"bias": "epilogue", "grid": "stride", "warps": 8}),
    ("elementwise_hardtanh_scale", {"vec": 4, "fast_math": True}),
    ("fused_matmul_scale_residual", {"bias": "epilogue", "stream": True}),
    ("norm_softmax", {"passes": "online", "cache": True}),
    ("norm_log_softmax", {"passes": "two_pass", "block": 2048}),
    ("norm_layernorm", {"passes": "online", "cache": False, "block": 1024}),
    ("fused_gemm_layernorm_gelu", {"passes": "online", "bias": "epilogue", "fast_math": True}),
    ("norm_rmsnorm", {"cache": True}),
    ("reduction_argmax", {"block": 1024}),
    ("reduction_row_sum", {"block": 4096}),
    ("matmul_batched", {"tile": "32x32x32"}),
]


# one case per family and per path: plain and epilogue/grid-stride elementwise, two-pass and online statistics,
# a row kept in registers, argmax ties, batched matmul
DEFAULT_LANE = ("elementwise_swish", "fused_conv2d_bias_relu", "norm_log_softmax", "norm_layernorm", "norm_rmsnorm",
                "reduction_argmax", "matmul_batched")


def _pick(stem: str, want: dict) -> tuple[str, str]:
    from htam_agent.bundled_tasks import SUITE_DIR
    from htam_agent.coder.exemplar import enumerate_candidates

    for vid, knobs, code in enumerate_candidates((SUITE_DIR / f"{stem}.py").read_text(), "triton", stem):
        if all(knobs.get(k) == v for k, v in want.items()):
            return vid, code
    raise AssertionError(f"{stem}: no triton variant with {want}")


def _check(stem: str, path: Path) -> None:
    """Runs in the subprocess with TRITON_INTERPRET=1."""
    import torch

    from htam_agent.bundled_tasks import SUITE_DIR
    from htam_agent.evaluation.tasks import load_task

    spec = importlib.util.spec_from_file_location(f"htam_ex_triton_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for size in ("small", "alt"):
        task = load_task(SUITE_DIR / f"{stem}.py", size=size)
        torch.manual_seed(0)
        ref = task.model_cls(*task.get_init_inputs())
        torch.manual_seed(0)
        new = module.ModelNew(*task.get_init_inputs())
        assert list(ref.state_dict()) == list(new.state_dict())
        new.load_state_dict(ref.state_dict())
        for seed, scale in ((0, 1.0), (1, 64.0)):
            torch.manual_seed(seed)
            inputs = [x * scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                      for x in task.get_inputs()]
            pristine = [x.clone() for x in inputs]
            with torch.no_grad():
                expected = ref(*inputs)
                got = new(*inputs)
            where = f"{stem} size={size} scale={scale}"
            assert all(torch.equal(a, b) for a, b in zip(pristine, inputs, strict=True)), f"{where}: input modified"
            assert got.shape == expected.shape and got.dtype == expected.dtype, where
            if not expected.is_floating_point():
                assert torch.equal(got, expected), f"{where}: {(got != expected).sum().item()} indices differ"
                continue
            rms = expected.double().pow(2).mean().sqrt().item()
            err = (got - expected).abs().max().item()
            assert torch.allclose(got, expected, rtol=1e-4, atol=1e-4 * rms), f"{where}: err {err:.3g} rms {rms:.3g}"
            print(f"ok {where} err={err:.3g}")


def _case_id(stem: str, want: dict) -> str:
    return f"{stem}-{'-'.join(map(str, want.values())) or 'default'}"


@pytest.fixture(scope="module")
def interpreted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every selected case checked in one interpreter process (support/interpreter_batch.py)."""
    pytest.importorskip("triton", reason="triton is not installed (pip install 'htam-agent[triton]')")
    folder = tmp_path_factory.mktemp("triton_cases")
    cases = {}
    for item in request.session.items:
        if item.module is request.module and hasattr(item, "callspec"):
            stem, want = item.callspec.params["stem"], item.callspec.params["want"]
            vid, code = _pick(stem, want)
            path = folder / f"triton_{stem}_{vid}.py"
            path.write_text(code)
            cases[_case_id(stem, want)] = [stem, str(path)]
    return run_cases(__file__, cases, timeout_s=900 * max(1, len(cases)))


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the first case's setup checks all of the run's cases
@pytest.mark.parametrize("stem,want", [
    pytest.param(s, w, id=_case_id(s, w), marks=[] if s in DEFAULT_LANE else [pytest.mark.exhaustive])
    for s, w in CASES])
def test_exemplar_triton_in_interpreter(interpreted: dict[str, dict], stem: str, want: dict):
    error = interpreted[_case_id(stem, want)]["error"]
    assert not error, f"{_case_id(stem, want)}:\n{error}"


if __name__ == "__main__":  # started with the repository on PYTHONPATH
    if sys.argv[1:2] == ["--batch"]:
        main(lambda stem, path: _check(stem, Path(path)))
        sys.exit(0)
    if os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("set TRITON_INTERPRET=1")
    _check(sys.argv[1], Path(sys.argv[2]))
