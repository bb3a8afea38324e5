"""Every bundled suite problem loads, runs on CPU at its small and alt sizes, and gives a usable reference.

"Usable" means: finite outputs, not (near) constant (so a candidate returning zeros or a constant cannot pass),
and the alt size really changes the shapes (so a kernel hard-coded to one shape fails there).
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from htam_agent.bundled_tasks import suite_files
from htam_agent.evaluation.tasks import load_task

SUITE = suite_files()
IDS = [p.stem for p in SUITE]
REQUIRED_CATEGORIES = (
    "elementwise",
    "reduction",
    "norm",
    "matmul",
    "conv",
    "pool",
    "loss",
    "attention",
    "model",
)


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _run(path, size: str):
    task = load_task(path, size=size)
    torch.manual_seed(0)
    init = task.get_init_inputs()
    model = task.model_cls(*init)
    torch.manual_seed(1)
    inputs = task.get_inputs()
    with torch.no_grad():
        out = model(*inputs)
    return task, inputs, _tensors(out)


@pytest.mark.parametrize("size", ["small", "alt"])
@pytest.mark.parametrize("path", SUITE, ids=IDS)
def test_problem_runs_on_cpu(path, size):
    task, inputs, outs = _run(path, size)
    assert outs, f"{path.name} ({size}): forward returned no tensor"
    for x in inputs:
        if isinstance(x, torch.Tensor):
            assert x.device.type == "cpu", f"{path.name}: get_inputs() must not pass device= (got {x.device})"
    for i, out in enumerate(outs):
        assert out.numel() > 0, f"{path.name} ({size}): output {i} is empty"
        o = out.detach().double()
        assert torch.isfinite(o).all(), f"{path.name} ({size}): output {i} has non-finite values"
        mean_abs = o.abs().mean().item()
        if o.numel() == 1:  # a scalar (e.g. a mean loss): it must at least not be ~0
            assert mean_abs > 1e-3, f"{path.name} ({size}): scalar output {i} is ~0 ({o.item()})"
        else:
            std = o.std().item()
            assert std > 1e-3 * mean_abs, (
                f"{path.name} ({size}): output {i} is near-constant (std {std:.3g}, mean |y| {mean_abs:.3g})"
            )


@pytest.mark.parametrize("path", SUITE, ids=IDS)
def test_size_dicts_name_globals_and_alt_changes_shapes(path):
    small = load_task(path, size="small")
    for dict_name in ("SMALL_SIZES", "ALT_SIZES"):
        sizes = getattr(small.module, dict_name, None)
        assert isinstance(sizes, dict) and sizes, f"{path.name}: needs a non-empty {dict_name} dict"
    _, small_in, small_out = _run(path, "small")
    _, alt_in, alt_out = _run(path, "alt")
    in_shapes = ([tuple(t.shape) for t in _tensors(small_in)], [tuple(t.shape) for t in _tensors(alt_in)])
    out_shapes = ([tuple(t.shape) for t in small_out], [tuple(t.shape) for t in alt_out])
    assert in_shapes[0] != in_shapes[1], f"{path.name}: alt inputs have the small shapes {in_shapes[0]}"
    if all(t.numel() == 1 for t in small_out):
        return  # a scalar output (a reduced loss) has one shape at every size; the inputs differ (checked above)
    assert out_shapes[0] != out_shapes[1], f"{path.name}: alt outputs have the small shapes {out_shapes[0]}"


def test_suite_size_and_categories():
    assert len(SUITE) >= 24, f"the suite has {len(SUITE)} problems; expected at least 24"
    categories = Counter(p.stem.split("_", 1)[0] for p in SUITE)
    missing = [c for c in REQUIRED_CATEGORIES if categories[c] == 0]
    assert not missing, f"suite categories missing: {missing} (have {dict(categories)})"
    assert categories["fused"] >= 6, f"only {categories['fused']} fused problems; expected at least 6"


def test_suite_files_are_plain_kernelbench_files():
    """Each file imports only torch (and the standard library) and defines the KernelBench names."""
    for path in SUITE:
        src = path.read_text()
        assert src.lstrip().startswith('"""'), f"{path.name}: start with a docstring saying what it computes"
        for name in (
            "class Model(nn.Module)",
            "def get_inputs(",
            "def get_init_inputs(",
            "SMALL_SIZES",
            "ALT_SIZES",
        ):
            assert name in src, f"{path.name}: missing {name!r}"
        for line in src.splitlines():
            if line.startswith(("import ", "from ")):
                module = line.split()[1].split(".")[0]
                assert module in {"torch", "math", "__future__"}, f"{path.name}: imports {module}"
        assert "device=" not in src, f"{path.name}: get_inputs() must not pass device="
