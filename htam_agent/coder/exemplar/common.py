"""What every exemplar candidate shares: the machine-readable header, knob moves, and the file's frame.

The header's first line (`# htam-exemplar: family=... backend=... knobs={...}`) lets the coder read back the
knobs of the current best code and change one of them, so a step's strategy is a move in a small space.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from .spec import Pattern

HEADER_RE = re.compile(r"^# htam-exemplar: family=(\S+) backend=(\S+) knobs=(\{.*\})\s*$", re.M)
NOTICE = "# Written by the htam exemplar coder (htam_agent/coder/exemplar) from a template; no LLM was used."

Knobs = dict[str, Any]
#: the most variants a family curates for one problem and backend; enumerate_candidates and the tests rely on it
MAX_VARIANTS = 24
# A move sets knobs to values; the value NEXT means "the next value of this knob's range" (cycling).
NEXT = "__next__"


def header(family: str, backend: str, knobs: Mapping[str, Any]) -> str:
    return f"# htam-exemplar: family={family} backend={backend} knobs={json.dumps(dict(knobs), sort_keys=True)}"


def parse_header(code: str | None) -> tuple[str, str, Knobs] | None:
    """(family, backend, knobs) from a candidate written by this coder, else None."""
    if not code:
        return None
    m = HEADER_RE.search(code)
    if not m:
        return None
    try:
        knobs = json.loads(m.group(3))
    except ValueError:
        return None
    return m.group(1), m.group(2), knobs if isinstance(knobs, dict) else {}


def variant_id(knobs: Mapping[str, Any]) -> str:
    """A stable, readable id for a knob assignment, e.g. `block256-vec4`."""
    parts = []
    for k in sorted(knobs):
        v = knobs[k]
        v = {True: "on", False: "off"}.get(v, v) if isinstance(v, bool) else v
        parts.append(f"{k}{v}")
    return re.sub(r"[^A-Za-z0-9.-]", "", "-".join(parts))


def apply_move(knobs: Knobs, move: Mapping[str, Any], space: Mapping[str, tuple[Any, ...]]) -> Knobs | None:
    """The knobs after a move restricted to this backend's space; None when nothing changes."""
    new = dict(knobs)
    for k, v in move.items():
        if k not in space:
            continue
        values = space[k]
        if v == NEXT:
            cur = new.get(k, values[0])
            v = values[(values.index(cur) + 1) % len(values)] if cur in values else values[0]
        if v in values:
            new[k] = v
    return new if new != knobs else None


def sanitize(knobs: Mapping[str, Any], space: Mapping[str, tuple[Any, ...]], default: Knobs) -> Knobs:
    """Knobs read from a header, kept only where they are valid for this space (others take the default)."""
    return {k: (knobs[k] if k in knobs and knobs[k] in space[k] else default[k]) for k in default}


class Variants:
    """A family's curated knob sets: the default first, then variations of it. Knobs outside the family's
    space are ignored (a variation written for every backend), and a set already listed is not added again."""

    def __init__(self, base: Knobs, space: Mapping[str, tuple[Any, ...]]) -> None:
        self.base, self.space, self.items = base, space, [base]

    def add(self, **knobs: Any) -> None:
        k = dict(self.base)
        k.update({a: b for a, b in knobs.items() if a in self.space})
        if k not in self.items:
            self.items.append(k)


def ext_name(prefix: str, source: str) -> str:
    """A load_inline module name unique to the source (two candidates never share a build folder name)."""
    return f"{prefix}_{hashlib.sha256(source.encode()).hexdigest()[:12]}"


def frame(pattern: Pattern, backend: str, family: str, knobs: Knobs, summary: str, body: str,
          forward: str, extra_imports: str = "") -> str:
    """The whole candidate file: header, docstring, imports, kernel code, and ModelNew."""
    args = ", ".join(("self",) + pattern.forward_args)
    imports = pattern.imports + ("\n" + extra_imports if extra_imports else "")
    if backend == "cuda" and "torch.cuda._compile_kernel(" in body:
        # CUDA is written in the fast form only (issue 21): nvcc without torch headers, the lean launcher.
        from .fast_cuda import FAST_LAUNCHER, to_fast_form

        body = to_fast_form("import torch\n" + body).split(FAST_LAUNCHER, 1)[1]
        body = FAST_LAUNCHER + body
        summary = summary.replace("compiled by NVRTC (torch.cuda._compile_kernel)",
                                  "built by nvcc without torch headers and launched by the fast CUDA launcher")
    doc = (f'"""Exemplar candidate for a {pattern.description} task on the {backend} backend.\n\n'
           f"{summary}\nWritten from a fixed template by the htam exemplar coder; no LLM was used.\n\"\"\"")
    return (f"{header(family, backend, knobs)}\n{NOTICE}\n{doc}\n\n{imports}\n\n{body.strip()}\n\n\n"
            f"class ModelNew(nn.Module):\n{pattern.init_source}\n"
            f"    def forward({args}):\n{forward.rstrip()}\n")


def prefix_lines(pattern: Pattern, bias_in_gemm: bool) -> list[str]:
    """Forward lines computing the PyTorch producer into `y` (a Linear or convolution), if there is one."""
    if pattern.prefix is None:
        return []
    return [f"        y = {pattern.prefix.call(bias_in_gemm)}  # GEMM/convolution stays in PyTorch"]
