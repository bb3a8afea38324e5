"""Speed of light: the least time a task can take on this device, from counted bytes and FLOPs.

Bytes: every input read once and every output written once. FLOPs: `torch.utils.flop_counter` over the
reference's forward (matmul, convolution, attention; elementwise work counts as zero, so the floor stays a
lower bound). Ceilings: a large device copy (bandwidth) and an fp32 matmul (peak), measured once per device
and cached next to the builds; measured again before a candidate is flagged, and at most hourly when one only
comes near the floor. A candidate faster than `floor / slack` is flagged, never believed
(cheat pattern 17); its fraction of the floor classifies the bottleneck for the agent.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..common.observe import flatten_outputs

SLACK = {"cuda": 0.8, "cpu": 0.25}  # a CPU ceiling measured on a busy machine is low: flag only far below


def _nbytes(values: Any) -> int:
    import torch

    return sum(t.numel() * t.element_size() for t in flatten_outputs(values) if isinstance(t, torch.Tensor))


def count(model: Any, inputs: list[Any]) -> tuple[int, int]:
    """(bytes, flops) of one forward of the reference."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad():
        counter = FlopCounterMode(display=False)
        with counter:
            out = model(*inputs)
    return _nbytes(inputs) + _nbytes(out), int(counter.get_total_flops())


def count_meta(task: Any) -> tuple[int, int] | None:
    """`count` on the meta device: the same shapes and FLOPs without a byte of the task's memory (a full-size
    forward here was one more input set and output held; issue 36). None where the reference cannot run there."""
    import torch

    try:
        with torch.device("meta"):
            torch.manual_seed(0)
            inputs = task.get_inputs()
            model = task.model_cls(*task.get_init_inputs())
        inputs = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in inputs]
        return count(model.to("meta"), inputs)
    except Exception:
        return None


def _measure(device: Any) -> dict[str, float]:
    import torch

    def best_ms(fn: Any, reps: int = 5) -> float:
        fn()
        best = float("inf")
        for _ in range(reps):
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            if device.type == "cuda":
                torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t0) * 1e3)
        return best

    n_copy = (1 << 28) if device.type == "cuda" else (1 << 25)  # 1 GiB / 128 MiB of fp32
    src = torch.empty(n_copy, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    ms = best_ms(lambda: dst.copy_(src))
    bw = 2 * src.numel() * 4 / (ms / 1e3)
    m = 8192 if device.type == "cuda" else 1024
    a = torch.randn(m, m, device=device)
    b = torch.randn(m, m, device=device)
    ms = best_ms(lambda: a @ b, reps=3)
    peak = 2 * m**3 / (ms / 1e3)
    return {"bandwidth_Bps": bw, "fp32_flops": peak}


CEILINGS = ("bandwidth_Bps", "fp32_flops")
#: the least time between two measurements of the ceilings made because a candidate came near the floor
#: (`ceilings(max_age_s=...)`): the probe holds 256 MiB on the CPU (two 128 MiB buffers), and on a busy machine
#: every near-floor verdict re-measured them, beside the evaluation's own processes (issue 36)
REFRESH_AFTER_S = 3600.0


def ceilings(device: Any, name: str, cache_dir: str, refresh: bool = False,
             max_age_s: float | None = None) -> dict[str, float]:
    """Measured once per device name and torch version and cached as JSON; `refresh` measures again and
    keeps the best of old and new (a measurement on a busy machine only ever understates the hardware),
    unless `max_age_s` is given and the cached ones are younger than that."""
    import torch

    safe = "".join(c if c.isalnum() else "_" for c in f"{name}_{torch.__version__}")
    path = Path(cache_dir) / f"ceilings_{safe}.json"
    old: dict[str, float] = {}
    try:
        cached = json.loads(path.read_text())
        old = {k: float(cached[k]) for k in CEILINGS}
        age = time.time() - float(cached.get("measured_at", 0.0))  # none in a cache written before it was kept
        if not refresh or (max_age_s is not None and 0 <= age < max_age_s):
            return old
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pass
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        data = _measure(device)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    data = {k: max(v, float(old.get(k, 0.0))) for k, v in data.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(dict(data, measured_at=time.time())))
    os.replace(tmp, path)
    return data


def floor_ms(nbytes: int, flops: int, ceil: dict[str, float], fp32: bool) -> tuple[float, str]:
    """The least time in ms, and which ceiling sets it ('memory' or 'compute')."""
    t_mem = nbytes / ceil["bandwidth_Bps"] * 1e3
    t_cmp = flops / ceil["fp32_flops"] * 1e3 if fp32 else 0.0
    return (t_cmp, "compute") if t_cmp > t_mem else (t_mem, "memory")
