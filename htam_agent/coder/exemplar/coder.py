"""ExemplarCoder: the `Coder` a user without an LLM gets; HTAM's directions and strategies still steer it.

Start from the knobs in the request's best code (read back from its header, when this coder wrote it), else
the family's default; on a repair, the family's safest knobs; otherwise apply the first retrieved strategy
that changes a knob on this backend (`variant` > 0 skips to the next applicable ones), then the chosen
direction's own move when no strategy applies, never a variant this task already measured (``request.tried``).
Without any guidance (no direction, no strategies: the no-memory baselines) it sweeps the curated variants in
order, by step and candidate index, skipping measured ones. Same request, same code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from htam_agent.backend_registry import UnknownBackend
from htam_agent.backend_registry import spec as backend_spec

from ..base import CodeProposal, CodeRequest, SpaceExhausted, UnsupportedTask
from .common import Knobs, apply_move, parse_header, sanitize, variant_id
from .families import family_module
from .patterns import recognize
from .spec import Pattern


@lru_cache(maxsize=64)
def _recognize(task_source: str, task_name: str) -> Pattern:
    return recognize(task_source, task_name)


def _snap(knobs: Knobs | None, start: Knobs, curated: list[Knobs], avoid: Sequence[Knobs] = ()) -> Knobs | None:
    """Keep the coder inside its enumerated space: a move that lands outside the curated variants (or on one this
    task already tried, ``avoid``) goes to the untried curated variant that keeps the knobs the move changed and
    most of the others; None if there is none (the move does not apply here, or all it could give was tried)."""
    if knobs is None:
        return None
    fresh = [c for c in curated if c != start and c not in avoid]
    if knobs in fresh:
        return knobs
    changed = {k for k in knobs if knobs.get(k) != start.get(k)}

    def fit(c: Knobs) -> tuple[int, int]:
        return (sum(c.get(k) == knobs[k] for k in changed), sum(c.get(k) == knobs[k] for k in knobs))

    if not fresh or not changed:
        return None
    best = max(fresh, key=fit)  # max keeps the first of equals: the curated order decides ties
    return dict(best) if fit(best)[0] > 0 else None


def _tried_knobs(request: CodeRequest, family: str, sp: Any, base: Knobs) -> list[Knobs]:
    """The knobs of the candidates this task already evaluated that this coder wrote (read from their headers)."""
    out: list[Knobs] = []
    for t in request.tried:
        parsed = parse_header(t.code)
        if parsed and parsed[0] == family and parsed[1] == request.backend:
            out.append(sanitize(parsed[2], sp, base))
    return out


@dataclass(frozen=True)
class Plan:
    """What the coder decided for a request: the knobs, and which strategy/direction moved them."""

    pattern: Pattern
    backend: str
    start: Knobs
    knobs: Knobs
    strategy_ids: tuple[str, ...]
    note: str
    applied: str | None = None  # the direction the knobs' change belongs to, when it is not the one asked


def plan(request: CodeRequest) -> Plan:
    """Decide the knobs for a request (no code yet); raises UnsupportedTask for tasks out of reach."""
    try:
        backend_spec(request.backend)
    except UnknownBackend as exc:
        raise UnsupportedTask(f"exemplar coder: {exc}") from None
    pattern = _recognize(request.task_source, request.task_name)
    fam = family_module(pattern.family)
    sp = fam.space(pattern, request.backend)
    base = fam.default(pattern, request.backend)
    if request.repair > 0:
        safe = fam.safe(pattern, request.backend)
        return Plan(pattern, request.backend, safe, safe, (),
                    f"repair {request.repair}: the family's safest variant ({variant_id(safe)})")
    curated = [dict(k) for k in fam.curated(pattern, request.backend)]
    tried = _tried_knobs(request, pattern.family, sp, base)
    if request.direction is None and not request.strategies:
        # no memory guidance at all (the refine / best-of-n / one-shot baselines): walk the curated space in
        # its fixed order, one new variant per step and per candidate, skipping what this task already measured
        k = (request.step + request.variant) % len(curated)
        k = next((j % len(curated) for j in range(k, k + len(curated)) if curated[j % len(curated)] not in tried),
                 None)
        if k is None:
            raise SpaceExhausted(f"exemplar coder: every variant of this task's space ({len(curated)} on "
                                 f"{request.backend}) was measured already; nothing new to write")
        return Plan(pattern, request.backend, base, dict(curated[k]), (),
                    f"no direction or strategy given: variant {k} of {len(curated)} in the fixed sweep order")
    start, origin = base, "the family's default"
    parsed = parse_header(request.best_code)
    if parsed and parsed[0] == pattern.family and parsed[1] == request.backend:
        start, origin = sanitize(parsed[2], sp, base), "the best code's knobs"
    if start not in curated:
        start = dict(curated[0])
    moves = fam.moves(request.backend)
    applicable: list[tuple[str, Knobs]] = []
    for s in request.strategies:
        if s.id.startswith("bc_"):  # boundary/correctness strategies: the safest variant
            safe = fam.safe(pattern, request.backend)
            if safe != start and safe not in tried:
                applicable.append((s.id, safe))
            continue
        if s.id in moves:
            new = _snap(apply_move(start, moves[s.id], sp), start, curated, tried)
            if new is not None:
                applicable.append((s.id, new))
    if applicable:
        sid, knobs = applicable[request.variant % len(applicable)]
        return Plan(pattern, request.backend, start, knobs, (sid,),
                    f"from {origin}, applied strategy {sid}")
    move = fam.DIRECTION_MOVES.get(request.direction or "", {})
    new = _snap(apply_move(start, move, sp), start, curated, tried) if move else None
    if new is not None:
        return Plan(pattern, request.backend, start, new, (),
                    f"from {origin}, no retrieved strategy applies here; direction {request.direction}'s own move")
    # Nothing asked for gives a variant this task has not measured (the move does not apply on this backend, e.g.
    # a thread mapping on the CPU, or it was tried): rather than write a measured candidate again (a wasted
    # evaluation), take the next untried curated variant after the start, and say which direction that change
    # belongs to, so the memory learns what was really done.
    i = curated.index(start)
    later = [curated[(i + d) % len(curated)] for d in range(1, len(curated))]
    nxt = next((c for c in later if c != start and c not in tried), None)
    if nxt is None:
        raise SpaceExhausted(f"exemplar coder: every variant of this task's space ({len(curated)} on "
                             f"{request.backend}) was measured already; nothing new to write")
    changed = {k for k in nxt if nxt.get(k) != start.get(k)}
    owner = next((d for d, mv in fam.DIRECTION_MOVES.items() if changed & set(mv)), None)
    return Plan(pattern, request.backend, start, nxt, (),
                f"from {origin}: direction {request.direction}'s moves give nothing new on {request.backend}; "
                f"the next untried curated variant instead ({', '.join(sorted(changed))} changed"
                + (f", a {owner} move)" if owner else ")"), applied=owner)


class ExemplarCoder:
    """Writes candidates from templates; no LLM, no network, deterministic."""

    name = "exemplar"
    uses_llm = False

    def propose(self, request: CodeRequest) -> CodeProposal:
        p = plan(request)
        fam = family_module(p.pattern.family)
        code = fam.render(p.pattern, p.backend, p.knobs)
        prompt = (f"exemplar: task {request.task_name} ({p.pattern.description}), family {p.pattern.family}, "
                  f"backend {p.backend}, direction {request.direction or '-'}, strategies "
                  f"{[s.id for s in request.strategies]}")
        reply = f"{p.note}; knobs {p.start} -> {p.knobs} (variant {variant_id(p.knobs)})"
        return CodeProposal(code=code, coder=self.name, uses_llm=False, prompt=prompt, reply=reply,
                            strategy_ids=list(p.strategy_ids), direction=p.applied, declared=p.applied is not None)
