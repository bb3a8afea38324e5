"""The cpp backend's launch knobs: how an OpenMP kernel's loops run, chosen at call time, not at build time.

A cpp candidate passes its launch knobs to the extension as a vector of integers (`_CFG`, read by
templates/cpp_cfg.cpp.tmpl on every call), so variants that differ only in them have the same C++ source and
share one build: a problem's whole space costs a build per compile-time setting (`-march`, the bias's place,
one- or two-pass statistics), not one per variant. That is what makes a verdict table of every variant of
every problem affordable on two cores.

The knobs are the ones that move CPU kernels: how many threads (all, or one: a small problem loses more to
the fork/join than it gains), the OpenMP schedule, omp simd on inner loops, independent accumulators that
break a reduction's dependency chain, the loop order of reductions over a non-innermost dim, and the block of
elements an elementwise loop hands a thread.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from .common import MAX_VARIANTS, Knobs, Variants

THREADS = ("all", "one")
SCHEDULES = ("static", "dynamic", "guided")

#: knobs read at call time (in _CFG's order: threads, sched, simd, acc, order, block); changing only these
#: never changes the C++ source
RUNTIME_KNOBS = ("threads", "sched", "simd", "vec", "acc", "order", "block")


def launch_space() -> dict[str, tuple[Any, ...]]:
    """The knobs every cpp kernel takes: threads and schedule."""
    return {"threads": THREADS, "sched": SCHEDULES}


def cfg(knobs: Mapping[str, Any]) -> list[int]:
    """The `_CFG` vector a cpp candidate passes with every call (templates/cpp_cfg.cpp.tmpl reads it)."""
    simd = bool(knobs.get("simd", False)) or int(knobs.get("vec", 1)) > 1
    return [1 if knobs.get("threads", "all") == "one" else 0,
            SCHEDULES.index(knobs.get("sched", "static")),
            int(simd),
            int(knobs.get("acc", 1)),
            1 if knobs.get("order", "row") == "tile" else 0,
            int(knobs.get("block", 0) or 0)]


def cfg_line(knobs: Mapping[str, Any]) -> str:
    """The candidate file's line that holds its launch knobs."""
    return f"_CFG = {cfg(knobs)!r}  # launch knobs: threads, schedule, simd, accumulators, loop order, block"


def curated(base: Knobs, space: Mapping[str, tuple[Any, ...]], quality: Iterable[str]) -> list[Knobs]:
    """The default, every combination of the `quality` knobs (the ones a tuned kernel turns on: simd, march,
    accumulators, loop order, the bias's place...) nearest the default first, then each of those with another
    schedule or a single thread, until MAX_VARIANTS: the good corner of the space is covered whole, and the
    launch knobs are measured where they matter, beside each setting of the others."""
    keys = [k for k in quality if k in space]
    variants = Variants(base, space)
    combos = [dict(zip(keys, vals, strict=True)) for vals in itertools.product(*(space[k] for k in keys))]
    combos.sort(key=lambda c: (sum(c[k] != base[k] for k in keys), [space[k].index(c[k]) for k in keys]))
    for c in combos:
        variants.add(**c)
    launch = [{"sched": s} for s in space.get("sched", ())[1:]] + [{"threads": t} for t in space.get("threads", ())[1:]]
    for c, extra in itertools.product(combos, launch):
        if len(variants.items) >= MAX_VARIANTS:
            break
        variants.add(**c, **extra)
    return variants.items[:MAX_VARIANTS]
