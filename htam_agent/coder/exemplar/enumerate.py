"""The finite candidate space of a task on a backend: every curated knob assignment, rendered.

Used to evaluate all of a task's exemplars in one batch (a ground truth for what each strategy is worth) and
by tests; the order is stable, the first entry is the family's default.
"""

from __future__ import annotations

from .common import Knobs, variant_id
from .families import family_module
from .patterns import recognize


def enumerate_candidates(task_source: str, backend: str, task_name: str = "task") -> list[tuple[str, Knobs, str]]:
    """[(variant_id, knobs, code)] for every curated variant (at most common.MAX_VARIANTS); raises UnsupportedTask."""
    pattern = recognize(task_source, task_name)
    fam = family_module(pattern.family)
    out = []
    for knobs in fam.curated(pattern, backend):
        out.append((variant_id(knobs), dict(knobs), fam.render(pattern, backend, knobs)))
    return out
