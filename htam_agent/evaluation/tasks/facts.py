"""What the parent must know of a task file before its first job: which sizes it has, the overrides derived for
the sizes it has no dict for, and its footprint at each (for the fit check, parent/fit.py).

Finding them runs the task file, which imports torch. The evaluation's parent does not hold torch for that
(~250 MB of a verdict's memory, and a second torch import on `htam eval`'s path): `parent/task_facts.py` calls
`task_facts` in the parent only where torch is loaded there already (an agent, a test), else in a short-lived
process of its own, `python -m htam_agent.evaluation.tasks.facts` (a JSON object {"source", "path"} on stdin,
the facts as JSON on stdout). The same function either way: one answer.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

OPTIONAL_SIZES = ("small", "alt")


def task_facts(source: str, path: str) -> dict[str, Any]:
    """{"derived": overrides or None, "has_size": {"small": bool, "alt": bool}, "sizes": [...] or None,
    "footprint_bytes": {size: bytes or None}}. Never raises for a bad task file: what cannot be found is None
    (or False), and the checker then reports the task's own error, as it would have."""
    from . import sizes
    from .footprint import try_measure
    from .loading import load_task_source

    derived: dict[str, Any] | None = None
    if not set(OPTIONAL_SIZES) <= sizes.explicit_dicts(source, path):
        try:
            derived = sizes.derived_overrides(source, path)
        except Exception:  # a file the deriver cannot read
            derived = None
    has: dict[str, bool] = {}
    for size in OPTIONAL_SIZES:
        try:
            has[size] = bool(sizes.has_size(source, size, path))
        except Exception:
            has[size] = False
    try:
        task_sizes: list[str] | None = list(load_task_source(source, path, check_inputs=False,
                                                             derived=derived).sizes)
    except Exception:
        task_sizes = None
    footprint: dict[str, int | None] = {}
    for size in task_sizes or ["default"]:
        try:
            fp = try_measure(load_task_source(source, path, size=size, check_inputs=False, derived=derived))
        except Exception:
            fp = None
        footprint[size] = None if fp is None else fp.total
    return {"derived": derived, "has_size": has, "sizes": task_sizes, "footprint_bytes": footprint}


def main() -> int:
    try:
        request = json.loads(sys.stdin.read())
        source, path = str(request["source"]), str(request["path"])
    except (ValueError, KeyError, TypeError) as exc:
        print(f"tasks.facts: expected a JSON object with 'source' and 'path' on stdin ({exc})", file=sys.stderr)
        return 2
    out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # what the task file prints is not the answer
        facts = task_facts(source, path)
    out.write(json.dumps(facts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
