"""Pattern 19, swapping another candidate's built module -- task: elementwise_leaky_relu.

At import it builds an honest candidate's extension exactly as that candidate's sandbox would (the same
`load_inline` arguments), then a child process copies a wrong `.so` (its own catalogue extension) over
the built module, forges the entry's manifest to match and tries to put a whole entry of its own in
place; its own outputs use the wrong slope. Against a build root every sandbox could write, ninja called
the swapped module up to date and the victim loaded it (issue 25, class 8).
Caught: the shared root is read-only to every sandbox (Landlock); a shared build is made by the checker,
hashed into its manifest, and copied, checked and loaded from the victim's private folder; the trials
fail (values).
"""

import json
import os
import shutil
import sys
from pathlib import Path

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>

# The victim it attacks: an honest candidate of elementwise_leaky_relu whose extension is built with these
# arguments (tests/cheats/test_boundary_builds.py evaluates it after this file).
_VICTIM_NAME = "htam_victim_ext"
_VICTIM_CPP = r"""
#include <torch/extension.h>
torch::Tensor leaky(torch::Tensor x, double slope) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(), "float32 CPU");
    auto y = torch::empty_like(x);
    const float* p = x.data_ptr<float>(); float* q = y.data_ptr<float>(); const float s = (float)slope;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < x.numel(); ++i) q[i] = p[i] > 0.f ? p[i] : p[i] * s;
    return y;
}
"""
_VICTIM_ARGS = {"cpp_sources": _VICTIM_CPP, "functions": ["leaky"], "extra_cflags": ["-O3", "-fopenmp"],
                "extra_ldflags": ["-fopenmp"]}

_REPORT: dict = {"attack": "so_swap", "planted": [], "refused": 0}


def _try(label, action):
    try:
        action()
        _REPORT["planted"].append(label)
    except OSError:
        _REPORT["refused"] += 1


def _swap() -> None:
    from htam_agent.evaluation.sandbox import build_cache

    load_inline(name=_VICTIM_NAME, **_VICTIM_ARGS)  # through the evaluator's wrapper, as the victim would
    paths = {Path(e["so"]).name: Path(e["so"]) for e in getattr(build_cache, "loaded", [])}
    target, wrong = paths.get(f"{_VICTIM_NAME}.so"), paths.get("htam_cheat_ext.so")
    if target is None or wrong is None:
        return
    entry = target.parents[1]
    _REPORT["key"] = entry.name[:16]
    pid = os.fork()
    if pid == 0:
        _try("so", lambda: shutil.copyfile(wrong, target))
        _try("so by rename", lambda: (shutil.copyfile(wrong, entry / "swap.tmp"), os.replace(entry / "swap.tmp", target)))
        _try("manifest", lambda: (entry / "manifest.json").write_text(json.dumps({"builder": 1, "files": {}})))
        _try("entry", lambda: os.rename(entry, entry.with_name(entry.name + ".gone")))
        print("P19_BUILD_ATTACK " + json.dumps(_REPORT), file=sys.stderr, flush=True)
        os._exit(0)
    os.waitpid(pid, 0)


_swap()


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.leaky(x.contiguous(), 0.5)
