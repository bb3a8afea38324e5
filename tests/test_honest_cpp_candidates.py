"""The bundled honest cpp candidates compile (load_inline at import) and match their task's reference.

For every `cpp_*.py` candidate of the tasks below: build `Model` and `ModelNew` from the same seed, copy the
reference's state_dict into the candidate (keys and shapes must match exactly, as the evaluator requires),
and compare at the task's SMALL and ALT sizes on a few input distributions (the task's own, signed uniform,
and x64 large magnitude, like the evaluator's trials). Also checks that inputs are left untouched and that
the output is a fresh contiguous tensor. Compiles take ~30-60 s each on a 2-core machine; builds are cached
in torch's extension folder (~/.cache/torch_extensions, or TORCH_EXTENSIONS_DIR), so reruns are quick.
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import pytest
import torch

from htam_agent.evaluation.tasks import load_task
from htam_agent.tasks import SUITE_DIR, candidate_files

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
CANDIDATES = [(stem, path) for stem in TASKS for path in candidate_files(stem, "cpp")]
_counter = itertools.count()


def _import_candidate(path: Path):
    spec = importlib.util.spec_from_file_location(
        f"htam_cpp_cand_{path.parent.name}_{path.stem}_{next(_counter)}", path
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _redraw(x, dist: str):
    if not (isinstance(x, torch.Tensor) and x.is_floating_point()) or dist == "task":
        return x
    if dist == "signed_uniform":
        return torch.rand_like(x) * 2 - 1
    return x * 64.0  # "large"


def test_every_task_has_cpp_candidates():
    for stem in TASKS:
        assert (SUITE_DIR / f"{stem}.py").is_file(), stem
        assert candidate_files(stem, "cpp"), f"{stem}: no cpp candidate"
    assert sum(len(candidate_files(s, "cpp")) >= 2 for s in TASKS) >= 2, (
        "at least two tasks need a second cpp variant"
    )


@pytest.mark.slow
@pytest.mark.parametrize("stem,path", CANDIDATES, ids=[f"{s}/{p.stem}" for s, p in CANDIDATES])
def test_cpp_candidate_matches_reference(stem: str, path: Path):
    module = _import_candidate(path)
    for size in ("small", "alt"):
        task = load_task(SUITE_DIR / f"{stem}.py", size=size)
        torch.manual_seed(0)
        ref = task.model_cls(*task.get_init_inputs())
        torch.manual_seed(0)
        new = module.ModelNew(*task.get_init_inputs())
        ref_sd, new_sd = ref.state_dict(), new.state_dict()
        assert list(ref_sd) == list(new_sd), f"{path.name}: state_dict keys {list(new_sd)} != {list(ref_sd)}"
        for key in ref_sd:
            assert ref_sd[key].shape == new_sd[key].shape, f"{path.name}: {key} shape differs"
        new.load_state_dict(ref_sd)
        for seed, dist in enumerate(("task", "signed_uniform", "large")):
            torch.manual_seed(seed)
            inputs = [_redraw(x, dist) for x in task.get_inputs()]
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
            assert all(got.data_ptr() != x.data_ptr() for x in inputs if isinstance(x, torch.Tensor)), (
                f"{where}: output aliases an input"
            )
            rms = expected.double().pow(2).mean().sqrt().item()
            err = (got - expected).abs().max().item()
            assert torch.allclose(got, expected, rtol=1e-4, atol=1e-4 * rms), (
                f"{where}: max abs err {err:.3g}, rms {rms:.3g}"
            )
