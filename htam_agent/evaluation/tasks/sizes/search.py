"""Choosing 'small' and 'alt': shrink the slots until a probe fits the budget, then move each to another odd value."""

from __future__ import annotations

import hashlib
import math
import time
from pathlib import Path
from typing import Any

from .analysis import Slot, _Analysis, _is_int
from .budget import BUDGET_MS, HARD_INPUT_BYTES, HARD_MS, MAX_INPUT_BYTES, MAX_PROBES, TARGET_MS, VERSION
from .probe import Probe, _Deriver
from .record import encode


def _fits(p: Probe) -> bool:
    return p.status == "ok" and p.est_ms <= BUDGET_MS and p.input_bytes <= MAX_INPUT_BYTES


def _divisors_among(v: int, values: list[int]) -> int:
    """lcm of the values (> 1) that divide v: what a multiple must keep to stay divisible by the same."""
    g = 1
    for u in values:
        if u > 1 and v % u == 0:
            g = g * u // math.gcd(g, u)
    return g


def _fixed_ints(analysis: _Analysis) -> list[int]:
    out: list[int] = []
    for v in analysis.fixed.values():
        out.extend([v] if _is_int(v) else [x for x in v if _is_int(x)])
    return out


def _halvings(slot: Slot, cur: dict[Slot, int], live: list[Slot], fixed: list[int],
              step: int = 2) -> list[dict[Slot, int]]:
    """Moves that divide one slot by `step` (then by 2, if `step` is larger): to a multiple of the fixed ints
    that divide it, plainly, then jointly with the live slots that divide it or that it divides (channels
    with groups, embedding with heads)."""
    v = cur[slot]
    g = _divisors_among(slot.default, fixed)
    partners = [s for s in live if s != slot and cur[s] > s.floor and (v % cur[s] == 0 or cur[s] % v == 0)]
    moves: list[dict[Slot, int]] = []
    for div in dict.fromkeys((step, 2)):
        target = max(slot.floor, v // div)
        if target >= v:
            continue
        candidates = [{slot: (target // g) * g}] if g > 1 and slot.floor <= (target // g) * g < v else []
        candidates.append({slot: target})
        if partners:
            candidates.append({slot: target, **{s: max(s.floor, cur[s] // div) for s in partners}})
        moves += [m for m in candidates if m not in moves]
    return moves


def _odd_values(slot: Slot, cur: dict[Slot, int], fixed: list[int], others: list[int]) -> list[int]:
    """Alt values for a slot, nearest first: odd neighbours, then non-power-of-two multiples of the fixed ints
    that divide it (groups, heads), then of every other size that divides it."""
    v = cur[slot]
    out: list[int] = [c for d in range(1, 7) for c in (v - d, v + d) if c > 1 and c % 2 == 1]  # v±1.. or v±2..
    for g in dict.fromkeys((_divisors_among(v, fixed), _divisors_among(v, fixed + others))):
        if g <= 1:
            continue
        k = v // g
        for k2 in sorted({k - 1, k + 1, k - 2, k + 2, k + 3}, key=lambda x: (x % 2 == 0, abs(x - k))):
            c = g * k2
            if k2 > 0 and c != v and c > 1 and (c & (c - 1)) != 0 and c not in out:
                out.append(c)
    return out


def _shrink(d: _Deriver, p: Probe) -> tuple[dict[Slot, int], Probe, list[str], dict[str, str]]:
    """Greedy halving from the default size (whose probe is `p`) until the cost model says it fits."""
    slots = d.analysis.slots
    cur = {s: s.default for s in slots}
    steps: list[str] = []
    frozen: dict[str, str] = {}
    fixed = _fixed_ints(d.analysis)
    while not _fits(p) and d.probes < MAX_PROBES:
        live = [s for s in slots if s.label not in frozen and cur[s] > s.floor]
        live.sort(key=lambda s: (-cur[s], s.order))  # largest first: shapes shrink evenly
        # Far over budget, larger steps: fewer probes at the sizes where a meta forward is slowest (an LSTM's
        # 512 steps), and never a coarser step near the budget.
        over = p.est_ms / BUDGET_MS if p.status == "ok" else 0.0
        step = 8 if over > 512 else 4 if over > 32 else 2
        moved = False
        for slot in live:
            last = ""
            for move in _halvings(slot, cur, live, fixed, step):
                q = d.probe({**cur, **move})
                if q.status != "invalid":
                    cur.update(move)
                    p, moved = q, True
                    steps.append(", ".join(f"{s.label}->{v}" for s, v in move.items()))
                    break
                last = f"{', '.join(f'{s.label}={v}' for s, v in move.items())}: {q.error}"
            if moved:
                break
            frozen[slot.label] = f"kept at {cur[slot]}: {last}"
        if not moved:
            break
    return cur, p, steps, frozen


def _alter(d: _Deriver, small: dict[Slot, int]) -> tuple[dict[Slot, int], Probe | None, list[str]]:
    """Move each slot, in source order, to the first alt value the reference accepts; a slot no value fits
    alone moves together with the slots of equal value (a loss whose targets must match the batch)."""
    cur = dict(small)
    p: Probe | None = None
    tried: list[str] = []
    fixed = _fixed_ints(d.analysis)
    slots = d.analysis.slots
    for slot in slots:
        if cur[slot] != small[slot]:
            continue  # moved already, together with an equal one
        others = [cur[s] for s in slots if s != slot]
        equal = [s for s in slots if s != slot and cur[s] == cur[slot]]
        values = _odd_values(slot, cur, fixed, others)
        moves = [{slot: v} for v in values[:10]] + [{slot: v, **{s: v for s in equal}} for v in values[:4] if equal]
        for move in moves:
            if d.probes >= MAX_PROBES:
                break
            q = d.probe({**cur, **move})
            if q.status == "ok" and q.input_bytes <= 2 * MAX_INPUT_BYTES:
                cur.update(move)
                p = q
                break
            tried.append(f"{', '.join(f'{s.label}={v}' for s, v in move.items())}: {q.error or q.status}")
    return cur, p, tried


def _size_record(d: _Deriver, values: dict[Slot, int], p: Probe, why: str, measure: bool) -> dict[str, Any]:
    _, overrides = d.overrides_for(values)
    rec: dict[str, Any] = {
        "overrides": encode(overrides),
        "changed": {s.label: [s.default, v] for s, v in values.items() if v != s.default},
        **{k: v for k, v in p.summary().items() if k != "status"},
        "cpu_ms": None, "cpu1_ms": None, "cpu_error": None, "why": why,
    }
    if measure:
        wall, cpu, rec["cpu_error"] = d.measure(values)
        if wall is not None and cpu is not None:
            rec["cpu_ms"], rec["cpu1_ms"] = round(wall, 3), round(cpu, 3)
            if min(wall, cpu) > TARGET_MS:
                rec["why"] += (f" Measured {min(wall, cpu):.0f} ms on the CPU: over the {TARGET_MS:.0f} ms "
                               "target.")
    return rec


def _suggest(path: Path, dict_name: str, names: list[str]) -> str:
    if not names:
        return (f"make the input sizes module-level globals that get_inputs() reads, and add "
                f"{dict_name} = {{'<global>': value, ...}} to {path}")
    inner = ", ".join(f"'{n}': ..." for n in dict.fromkeys(names))
    return f"add {dict_name} = {{{inner}}} to {path}"


def _derive(source: str, path: Path, measure: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    d = _Deriver(source, path)
    a = d.analysis
    report: dict[str, Any] = {
        "version": VERSION, "path": str(path), "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
        "slots": [{"global": s.label, "default": s.default, "floor": s.floor} for s in a.slots],
        "kept": {n: a.notes[n] for n in a.notes},
        "default": None, "small": None, "alt": None, "problems": {"small": None, "alt": None},
    }
    default_probe = d.probe({s: s.default for s in a.slots})
    report["default"] = default_probe.summary()
    if default_probe.status == "invalid":
        msg = (f"{path}: the reference does not run at the file's own sizes ({default_probe.error}); "
               "fix the file, then sizes can be derived")
        report["problems"] = {"small": msg, "alt": msg}
        report["seconds"] = round(time.perf_counter() - t0, 3)
        return report
    names = [s.name for s in a.slots]
    small, p, steps, frozen = _shrink(d, default_probe)
    held = "; ".join(f"{k} {v}" for k, v in frozen.items()) or (
        "every size global is at its floor" if a.slots else
        "get_inputs(), get_init_inputs() and Model read no module-level size global: the sizes are literals")
    if a.literals:
        held += "; literal sizes the derivation cannot change: " + "; ".join(
            f"{where}: {', '.join(map(str, vals))}" for where, vals in a.literals.items())
    if p.status == "ok" and p.est_ms <= HARD_MS and p.input_bytes <= HARD_INPUT_BYTES:
        if not steps:
            why = "The default size already fits the budget."
        else:
            why = (f"Halved the largest size globals until the cost model gave "
                   f"{p.est_ms:.1f} ms (budget {BUDGET_MS:.0f} ms) and {p.input_bytes / 2**20:.2f} MiB of inputs "
                   f"(at most {MAX_INPUT_BYTES >> 20} MiB); checked on {p.mode}.")
        if not _fits(p):
            why = (f"Over budget: the smallest valid size found costs {p.est_ms:.1f} ms by the cost model and "
                   f"{p.input_bytes / 2**20:.2f} MiB of inputs ({held}). To go lower, "
                   f"{_suggest(path, 'SMALL_SIZES', names)}.")
        report["small"] = _size_record(d, small, p, why, measure)
        report["small"]["steps"] = steps
        report["small"]["kept_at"] = frozen
    else:
        cause = (p.error if p.status != "ok" else
                 f"the smallest valid size found costs {p.est_ms:.0f} ms by the cost model and "
                 f"{p.input_bytes / 2**20:.1f} MiB of inputs: {held}")
        report["problems"]["small"] = (f"{path}: no 'small' size could be derived ({cause}); "
                                       f"{_suggest(path, 'SMALL_SIZES', names)}")
    if report["small"] is not None:
        if not a.slots:
            report["problems"]["alt"] = (f"{path}: no 'alt' size: get_inputs(), get_init_inputs() and Model read "
                                         f"no module-level size global to vary; {_suggest(path, 'ALT_SIZES', names)}")
        else:
            alt, pa, tried = _alter(d, small)
            if pa is None or alt == small:
                report["problems"]["alt"] = (
                    f"{path}: no 'alt' size: no size global could move to another value the reference accepts "
                    f"({'; '.join(tried[:4])}); {_suggest(path, 'ALT_SIZES', names)}")
            else:
                odd = [s.label for s in a.slots if alt[s] != small[s] and alt[s] % 2 == 1]
                even = [s.label for s in a.slots if alt[s] != small[s] and alt[s] % 2 == 0]
                why = (f"Moved {len(odd) + len(even)} of {len(a.slots)} size globals off the small size"
                       + (f", to odd values: {', '.join(odd)}" if odd else "")
                       + (f"; to non-power-of-two multiples of their divisors: {', '.join(even)}" if even else "")
                       + (f"; kept {', '.join(s.label for s in a.slots if alt[s] == small[s])} (no other value "
                          "ran)" if any(alt[s] == small[s] for s in a.slots) else "")
                       + f"; checked on {pa.mode}.")
                report["alt"] = _size_record(d, alt, pa, why, measure)
    report["probes"] = d.probes
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return report
