"""Exemplar CUDA candidates cannot run here (no GPU): check that every kernel compiles with nvcc for sm_90.

The kernel string (`_SOURCE`) is what the fast CUDA launcher (`_fast_kernel`) hands nvcc on the GPU host; nvcc
--cubin catches syntax and type errors, undeclared names and launch-bound mistakes. Running them is the
lead's H200 batch (`htam exemplar write --suite --backend cuda` then `python -m htam_agent.evaluation batch`).
By default the kernels of a sample of variants compile (exemplar_helpers.knob_sample: every task's first
variant and every knob value of each family); `-m exhaustive` compiles the kernels of all the others.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from exemplar_helpers import COVERED, knob_sample, task_source

from htam_agent.coder.exemplar import enumerate_candidates

_SOURCE_RE = re.compile(r'_SOURCE = r"""\n(.*?)"""', re.S)
_KERNEL_RE = re.compile(r'_fast_kernel\(_SOURCE, "(\w+)"\)')
_STAGED_RE = re.compile(r'    r"""(.*?)"""', re.S)


def staged_sources(code: str, block: int) -> list[str]:
    """Every NVRTC source of a staged candidate, once per value of G (threads per output) it can be built with."""
    out = []
    for src in _STAGED_RE.findall(code.split("_SOURCES = [", 1)[1].split("\n]\n", 1)[0]):
        groups = (1, 32, block) if "{G_DEFINE}" in src else (0,)
        out += [src.replace("{G_DEFINE}", f"#define G {g}\n") for g in groups]
    return out


def _kernels() -> tuple[dict[str, list[str]], set[str]]:
    """Kernel source -> the variants that use it (many variants differ only in the Python launcher), and the
    default lane's sample of variants ("task/variant")."""
    found: dict[str, list[str]] = {}
    variants = []
    for stem in sorted(COVERED):
        for vid, knobs, code in enumerate_candidates(task_source(stem), "cuda", stem):
            variants.append((stem, COVERED[stem], vid, knobs))
            if "_SOURCES = [" in code:
                for src in staged_sources(code, knobs["block"]):
                    assert 'extern "C" __global__ void __launch_bounds__' in src, f"{stem}/{vid}"
                    found.setdefault(src, []).append(f"{stem}/{vid}")
                continue
            m = _SOURCE_RE.search(code)
            assert m, f"{stem}/{vid}: no _SOURCE kernel string"
            name = _KERNEL_RE.search(code)
            assert name and 'extern "C" __global__ void __launch_bounds__' in m.group(1), f"{stem}/{vid}"
            assert f" {name.group(1)}(" in m.group(1), f"{stem}/{vid}: compiled name not defined in the source"
            found.setdefault(m.group(1), []).append(f"{stem}/{vid}")
    return found, {f"{stem}/{vid}" for stem, vid in knob_sample(variants)}


def _nvcc(source: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / "k.cu"
        cu.write_text(source)
        proc = subprocess.run(["nvcc", "--cubin", "-arch=sm_90", "-o", str(Path(tmp) / "k.cubin"), str(cu)],
                              capture_output=True, text=True, timeout=300)
    return "" if proc.returncode == 0 else proc.stderr[-2000:]


def _compile(sampled: bool) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    every, sample = _kernels()
    assert len(every) > 50
    kernels = {src: users for src, users in every.items() if bool(sample & set(users)) == sampled}
    assert kernels, "nothing to compile in this lane"
    with ThreadPoolExecutor(max_workers=2) as pool:
        errors = list(pool.map(_nvcc, kernels))
    failed = [(users[0], err) for (src, users), err in zip(kernels.items(), errors, strict=True) if err]
    assert not failed, "\n\n".join(f"{who}:\n{err}" for who, err in failed[:5])


@pytest.mark.slow
def test_exemplar_cuda_kernels_compile_for_sm90():
    """The sample's kernels: 68 of 302 sources when this was written."""
    _compile(sampled=True)


@pytest.mark.slow
@pytest.mark.exhaustive
def test_every_other_exemplar_cuda_kernel_compiles_for_sm90():
    _compile(sampled=False)


def test_cuda_candidates_use_the_fast_form_and_runtime_scalars():
    """The fast form only (no torch headers in cuda_sources, no NVRTC launch), constructor scalars at run time."""
    from htam_agent.coder.exemplar.fast_cuda import FAST_LAUNCHER

    code = enumerate_candidates(task_source("elementwise_hardtanh_scale"), "cuda", "t")[0][2]
    assert FAST_LAUNCHER in code and "torch.cuda._compile_kernel" not in code
    assert "torch/extension.h" not in code and "no_implicit_headers=True" in code
    assert "double s2_in" in code and "float(self.scale)" in code and "2.5" not in code
