"""A run as a person sees it, read from its artifact folder alone (run.json, events.jsonl, the candidates'
verdict.json and code.py, result.json).

The folder is the one source for the chat, the terminal and the page: a run started in another process, or
one whose process was killed, reads the same, and nothing is lost when a front end goes away.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_agent.evaluation.parent.readout import Readout


@dataclass
class Attempt:
    """One evaluated candidate: its number in the run (1-based, in step, variant, repair order)."""

    number: int
    step: int
    variant: int
    repair: int
    folder: Path
    verdict: dict[str, Any]

    @property
    def readout(self) -> Readout:
        return Readout(self.verdict)

    @property
    def code(self) -> str:
        path = self.folder / "code.py"
        return path.read_text() if path.is_file() else ""

    @property
    def label(self) -> str:
        return f"candidate {self.number} (step {self.step}, variant {self.variant}, repair {self.repair})"

    @property
    def generation(self) -> dict[str, Any]:
        """What the coder was asked and what it says it applied (generation.json): direction,
        assigned_direction, declared, strategy_ids, coder."""
        return _read_json(self.folder / "generation.json") or {}

    @property
    def coder_note(self) -> str:
        """The coder's own words on what it did, outside its code, squeezed to a sentence or two."""
        try:
            reply = (self.folder / "reply.md").read_text()
        except OSError:
            return ""
        return coder_note(reply)


def coder_note(reply: str, limit: int = 240) -> str:
    """A reply's prose without its code blocks or knob dumps, cut at a word."""
    text = re.sub(r"```.*?(```|$)", " ", reply, flags=re.S)
    text = text.split("; knobs ", 1)[0]  # the exemplar coder's note, then its knob settings
    text = " ".join(text.split())
    return "" if text.startswith("(no reply") else shorten(text, limit)


def shorten(text: str, limit: int) -> str:
    """text cut to at most `limit` characters at a word boundary, marked with "..." when cut."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 3].rsplit(" ", 1)[0].rstrip(",;:(")
    return cut + "..."


@dataclass
class StepRow:
    """One step as the front ends show it: `direction` is what the step's code applied (what the run records),
    `asked` what the policy or the person asked for; they differ when the coder declared another move."""

    step: int
    direction: str = ""
    asked: str = ""
    switch: str = ""  # why the applied direction differs from the asked one, in the coder's words
    offered: list[str] = field(default_factory=list)  # the asked direction's strategies, when the coder used others
    strategies: list[str] = field(default_factory=list)
    chosen_by: str = ""
    verdicts: list[str] = field(default_factory=list)
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    done: bool = False
    repeats: list[str] = field(default_factory=list)  # "#3 is #1 again": a candidate that re-submits old code

    @property
    def direction_shown(self) -> str:
        if self.asked and self.direction and self.asked != self.direction:
            return f"{self.direction} (asked {self.asked})"
        return self.direction or self.asked or "-"

    def explanation(self) -> str:
        """Why the step's direction is not the one asked for, or that a candidate repeated an earlier one."""
        out = []
        if self.asked and self.direction and self.asked != self.direction:
            out.append(f"step {self.step}: asked {self.asked}; the coder applied {self.direction}"
                       + (f" ({self.switch})" if self.switch else " (its own declared move)"))
        out += [f"step {self.step}: {r}" for r in self.repeats]
        return "\n".join(out)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_events(root: Path) -> list[dict[str, Any]]:
    path = root / "events.jsonl"
    out: list[dict[str, Any]] = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line being written right now
    return out


class RunView:
    """Everything the front ends show of one run; cheap to build again on every refresh."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.run_id = self.root.name
        self.info: dict[str, Any] = _read_json(self.root / "run.json") or {}
        self.result: dict[str, Any] | None = _read_json(self.root / "result.json")
        self.events = read_events(self.root)
        self.attempts = self._attempts()
        self.steps = self._steps()

    @property
    def exists(self) -> bool:
        return bool(self.info)

    @property
    def task_name(self) -> str:
        return str(self.info.get("task_name", self.run_id))

    @property
    def context(self) -> dict[str, Any]:
        return dict(self.info.get("context") or {})

    @property
    def pause(self) -> dict[str, Any] | None:
        """The decision the run waits for, when its last event is a pause (None: it is not waiting)."""
        if self.result is None and self.events and self.events[-1].get("event") == "interrupt":
            return self.events[-1]
        return None

    def state(self, active: bool = False) -> str:
        if self.result is not None:
            return "finished"
        if active:
            return "running"
        if self.pause is not None:
            return "paused"
        return "stopped (resumable)" if self.exists else "unknown"

    def _attempts(self) -> list[Attempt]:
        found = []
        for path in self.root.glob("step_*/cand_*_r*/verdict.json"):
            try:
                step = int(path.parent.parent.name.removeprefix("step_"))
                variant_s, repair_s = path.parent.name.removeprefix("cand_").split("_r")
                found.append((step, int(variant_s), int(repair_s), path))
            except ValueError:
                continue
        out = []
        for i, (step, variant, repair, path) in enumerate(sorted(found), start=1):
            out.append(Attempt(i, step, variant, repair, path.parent, _read_json(path) or {}))
        return out

    def _steps(self) -> list[StepRow]:
        rows: dict[int, StepRow] = {}
        for ev in self.events:
            step = ev.get("step")
            if not isinstance(step, int):
                continue
            row = rows.setdefault(step, StepRow(step))
            kind = ev.get("event")
            if kind == "direction":
                row.direction = row.asked = str(ev.get("direction") or "")
            elif kind == "strategies":
                row.strategies = list(ev.get("strategies") or [])
            elif kind == "step_done":
                row.done = True
                row.direction = str(ev.get("direction") or row.direction)
        for step in rows:
            person = (_read_json(self.root / f"step_{step:02d}" / "direction.json") or {}).get("person")
            if person:
                rows[step].chosen_by = f"person: {person.get('action')}"
                if person.get("action") == "direction":
                    rows[step].asked = str(person.get("direction") or rows[step].asked)
                    if not rows[step].done:
                        rows[step].direction = rows[step].asked
        seen: dict[str, int] = {}
        for a in self.attempts:
            row = rows.setdefault(a.step, StepRow(a.step))
            r = a.readout
            gen = a.generation
            code = a.code
            digest = hashlib.sha256(code.encode()).hexdigest() if code else ""
            same = seen.get(digest) if digest else None
            seen.setdefault(digest, a.number)
            row.verdicts.append(f"#{a.number} {shorten(r.outcome(), 80)}" + (f" (same code as #{same})" if same
                                                                              else ""))
            if same:
                row.repeats.append(f"candidate {a.number} re-submitted candidate {same}'s code (the coder had "
                                   "no new variant to try); its verdict is a second timing of that kernel")
            applied, assigned = gen.get("direction"), gen.get("assigned_direction")
            if applied and assigned and applied != assigned:
                row.asked = row.asked or str(assigned)
                row.direction = str(applied)
                row.switch = row.switch or a.coder_note
                if not row.offered:  # the listed strategies were the asked direction's; show what was applied
                    row.offered, row.strategies = row.strategies, []
                row.strategies += [x for x in gen.get("strategy_ids") or [] if x not in row.strategies]
            if r.accepted and (r.speedup_vs_eager or 0) > (row.speedup_vs_eager or 0):
                row.speedup_vs_eager, row.speedup_vs_compile = r.speedup_vs_eager, r.speedup_vs_compile
        return [rows[s] for s in sorted(rows)]

    # -- the best kernel and how it got there ----------------------------------------------------------
    def bests(self) -> list[Attempt]:
        """Each accepted candidate that was faster than every one before it, in order."""
        out: list[Attempt] = []
        for a in self.attempts:
            sp = a.readout.speedup_vs_eager
            if a.readout.accepted and sp is not None and (not out or sp > (out[-1].readout.speedup_vs_eager or 0)):
                out.append(a)
        return out

    def best_diff(self) -> str:
        """The current best kernel's diff to the previous best (empty when there is at most one)."""
        b = self.bests()
        if len(b) < 2:
            return ""
        return "".join(difflib.unified_diff(b[-2].code.splitlines(True), b[-1].code.splitlines(True),
                                            f"candidate {b[-2].number}", f"candidate {b[-1].number}"))

    def attempt(self, number: int | None = None, *, rejected: bool = False) -> Attempt | None:
        """Candidate `number`, or the last one (the last not accepted, with rejected=True)."""
        if number is not None:
            return next((a for a in self.attempts if a.number == number), None)
        pool = [a for a in self.attempts if not (rejected and a.readout.accepted)]
        return pool[-1] if pool else None

    def last_activity(self) -> str:
        """What the run is doing now, for a progress line."""
        if not self.events:
            return "starting"
        ev = self.events[-1]
        kind, step = ev.get("event"), ev.get("step")
        since = ""
        if self.result is None and isinstance(ev.get("ts"), (int, float)):
            since = f" ({max(0, time.time() - ev['ts']):.0f} s so far)"  # a long step shows it is alive
        if kind in ("generate", "generated"):
            return self._activity(kind, step, ev) + since
        return self._activity(kind, step, ev)

    @staticmethod
    def _activity(kind: Any, step: Any, ev: dict[str, Any]) -> str:
        if kind == "generate":
            return (f"step {step}: writing and compiling variant {ev.get('variant')}"
                    + (f" (repair {ev.get('repair')})" if ev.get("repair") else ""))
        if kind == "generated":
            return f"step {step}: verifying and timing variant {ev.get('variant')} (compile: {ev.get('compile')})"
        if kind == "verdict":
            return f"step {step}: verdict {ev.get('status')}: {shorten(str(ev.get('reason', '')), 120)}"
        if kind == "interrupt":
            return f"step {step}: waiting for your decision (direction {ev.get('direction')})"
        if kind == "done":
            return str(ev.get("headline", "done"))
        return f"step {step}: {kind}"

    def summary(self) -> dict[str, Any]:
        """One line's worth of the run, for listing and comparing."""
        ctx = self.context
        res = self.result or {}
        best = self.bests()
        last = best[-1].readout if best else Readout(None)
        return {"run_id": self.run_id, "task": self.task_name, "backend": ctx.get("backend"),
                "coder": res.get("coder") or ("exemplar" if not ctx.get("model") else ctx.get("model")),
                "steps_done": sum(1 for s in self.steps if s.done), "steps_budget": ctx.get("steps"),
                "evaluated": len(self.attempts),
                "accepted": sum(1 for a in self.attempts if a.readout.accepted),
                "best_speedup_vs_eager": last.speedup_vs_eager, "best_speedup_vs_compile": last.speedup_vs_compile,
                "best_roofline_fraction": last.roofline_fraction,
                "headline": (self.events[-1].get("headline") if self.events and self.events[-1].get("event") == "done"
                             else None)}


def list_runs(runs_dir: str | Path) -> list[RunView]:
    """Every run folder under runs_dir, newest first (folder names start with the start time)."""
    root = Path(runs_dir).expanduser()
    if not root.is_dir():
        return []
    return [RunView(p) for p in sorted(root.iterdir(), reverse=True) if (p / "run.json").is_file()]
