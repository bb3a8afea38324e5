"""The finite candidate space of a task on a backend: every curated knob assignment, rendered.

Used to evaluate all of a task's exemplars in one batch (a ground truth for what each strategy is worth) and
by tests; the order is stable, the first entry is the family's default. A caller that wants several backends
recognises the task once and asks `variants` per backend (recognising reads the reference with torch.fx).
"""

from __future__ import annotations

from .common import Knobs, variant_id
from .families import family_module
from .patterns import recognize
from .spec import Pattern


def variants(pattern: Pattern, backend: str) -> list[tuple[str, Knobs, str]]:
    """[(variant_id, knobs, code)] for every curated variant (at most common.MAX_VARIANTS) of a recognised task
    on `backend`; raises UnsupportedTask where the family has no form on that backend."""
    fam = family_module(pattern.family)
    return [(variant_id(knobs), dict(knobs), fam.render(pattern, backend, knobs))
            for knobs in fam.curated(pattern, backend)]


def enumerate_candidates(task_source: str, backend: str, task_name: str = "task") -> list[tuple[str, Knobs, str]]:
    """`variants` of the task's pattern; raises UnsupportedTask."""
    return variants(recognize(task_source, task_name), backend)
