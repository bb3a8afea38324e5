"""Per-kind stage emitters of the staged family: one module per stage kind, one registry.

Each module (map, reduce, norm, scan, pool) exposes `KIND`, `LAYOUT` (whether the launcher computes the
K/R/K2 layout), `shape_lines` and `py_params` (the launcher's and forward's kind-specific parts), and for each
backend `cuda_source`/`cuda_launch` and `cpp_body`/`cpp_launch` (plus `cpp_opdef` where the C++ body reads an
OP code). Kernel text lives in templates/<kind>.cu.tmpl and <kind>.cpp.tmpl. A new stage kind is a new module
here, added to `EMITTERS`, and a lowering (lower.py) that opens such stages.
"""

from __future__ import annotations

from types import ModuleType

from . import map as map_stage
from . import norm, pool, reduce, scan

EMITTERS: dict[str, ModuleType] = {m.KIND: m for m in (map_stage, reduce, norm, scan, pool)}


def emitter(kind: str) -> ModuleType:
    """The emitter module of a stage kind; names the kinds there are when asked for another."""
    try:
        return EMITTERS[kind]
    except KeyError:
        raise ValueError(f"staged program: no emitter for stage kind {kind!r} (htam_agent/coder/exemplar/stages/ "
                         f"has {sorted(EMITTERS)})") from None
