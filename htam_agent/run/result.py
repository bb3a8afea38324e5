"""What one optimization run returns: the compact summary the CLI, the LangChain tool and the bench share.

Plain dataclasses of JSON types, so a result crosses process and host boundaries (Ray) as JSON.

The run's conclusion (`RunResult.conclusion()`, a `RunConclusion`; the memory's `Outcome` is one step's)
says what happened in words a user acts on: a kernel faster than eager PyTorch and torch.compile (use it),
faster than eager only (torch.compile is faster still), or no kernel faster than eager (keep PyTorch), and why
when the roofline explains it: a baseline already at most of the roofline floor leaves a kernel nothing to gain. The headline, report.md and the `optimize_kernel` tool's answer
all say it the same way.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

# NEAR_ROOFLINE: a baseline at this fraction of the roofline floor or more leaves at most 1/0.7 = 1.43x to gain,
# so the roofline explains why no kernel beat it (the memory calls a candidate this close "near_roofline" too)
from htam_agent.evaluation.parent.readout import NEAR_ROOFLINE, Readout

if TYPE_CHECKING:
    from htam_agent.state import StepRecord

#: a speedup must reach 1 + NOISE to count as beating a baseline: below that it is within the run-to-run spread
#: of one timing (about 1-2% on an idle GPU) and a hand-written kernel is not worth keeping for it
NOISE = 0.02


def _num(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def verdict_facts(verdict: dict[str, Any] | None) -> dict[str, Any] | None:
    """The timings and roofline of one verdict, as RunResult.best_facts holds them (None when it has none)."""
    return Readout(verdict).facts()


def best_verdict_in(artifact_dir: str | Path, step: int | None, speedup: float | None) -> dict[str, Any] | None:
    """The accepted verdict of a finished run's best candidate, read back from its artifact folder
    (`step_NN/cand_V_rR/verdict.json`): the one of the best step whose speedup is the run's best, else the
    step's fastest accepted one. None when the folder or the files are not there."""
    if step is None:
        return None
    folder = Path(artifact_dir) / f"step_{step:02d}"
    accepted: list[dict[str, Any]] = []
    try:
        files = sorted(folder.glob("cand_*/verdict.json"))
    except OSError:
        return None
    for path in files:
        try:
            v = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(v, dict) and Readout(v).accepted:
            accepted.append(v)
    if not accepted:
        return None
    same = [v for v in accepted if speedup is not None and Readout(v).speedup_vs_eager == _num(speedup)]
    return (same or sorted(accepted, key=lambda v: Readout(v).speedup_vs_eager or 0.0))[-1]


@dataclass(frozen=True)
class RunConclusion:
    """What a run found, in words: `kind` for programs, `advice` and `summary` (and `why`) for people."""

    kind: str      # faster | faster_than_eager_only | not_faster | untimed | no_correct_kernel
    advice: str    # use the kernel | use torch.compile | keep PyTorch | time the kernel before using it
    summary: str   # one clause: what happened, with the speedups
    why: str = ""  # the roofline's explanation (or its hint that more is possible), "" when nothing is known
    eager_roofline_fraction: float | None = None
    compile_roofline_fraction: float | None = None

    @property
    def beat_eager(self) -> bool:
        return self.kind in ("faster", "faster_than_eager_only")

    def sentence(self) -> str:
        return f"{self.summary}; {self.advice}" + (f": {self.why}" if self.why else "")


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _ceiling(facts: dict[str, Any]) -> str:
    bound = facts.get("bound")
    if bound == "memory":
        bw = facts.get("bandwidth_GBps")
        return "memory-bound" + (f", at {bw:.0f} GB/s memory bandwidth" if bw else "")
    if bound == "compute":
        tf = facts.get("fp32_tflops")
        return "compute-bound" + (f", at {tf:.1f} TFLOP/s fp32 peak" if tf else "")
    return ""


def _roofline_why(name: str, fraction: float | None, facts: dict[str, Any], *, lost: bool) -> str:
    """Why a baseline could not be beaten (lost=True) or how close it is (lost=False)."""
    if fraction is None:
        return ""
    ceiling = _ceiling(facts)
    where = f"{_pct(fraction)} of the roofline" + (f" ({ceiling})" if ceiling else "")
    if fraction >= 1.0:
        return (f"{name} already runs at the roofline ({_pct(fraction)} of the floor measured on this device"
                + (f"; {ceiling}" if ceiling else "") + "), so no kernel can be faster")
    if fraction >= NEAR_ROOFLINE:
        return f"{name} already runs at {where}, so no kernel can be more than {1 / fraction:.2f}x faster"
    if lost:
        return (f"{name} runs at only {where}, so a faster kernel may exist: more steps, candidates or another "
                f"direction may find it")
    return ""


@dataclass
class RunResult:
    run_id: str
    task: str
    task_path: str
    backend: str
    coder: str                       # "exemplar" or the model name
    uses_llm: bool
    method: str                      # htam | flat | none memory, plus policy / ablations
    correct: bool                    # at least one accepted candidate
    best_speedup_vs_eager: float | None
    best_speedup_vs_compile: float | None
    best_roofline_fraction: float | None
    best_step: int | None
    best_code_path: str | None       # ready-to-use ModelNew file in the artifact folder
    artifact_dir: str
    evaluations: int                 # candidates evaluated (repairs included)
    llm_calls: int
    input_tokens: int
    output_tokens: int
    wall_seconds: float
    stop_reason: str                 # budget | target_speedup | roofline | space_exhausted | unsupported | ...
    steps: list[StepRecord] = field(default_factory=list)  # the graph's own step records (state.history)
    error: str = ""
    #: the best verdict's medians and roofline (verdict_facts); None: read back from the artifact folder
    best_facts: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        data = dict(data)
        data["steps"] = [dict(s) for s in data.get("steps", [])]
        return cls(**data)

    def facts(self) -> dict[str, Any]:
        """The best kernel's timings and roofline: `best_facts`, else read once from the run's artifact folder
        (the best step's verdict.json), else {}."""
        if self.best_facts:
            return self.best_facts
        cached = self.__dict__.get("_facts_read")
        if cached is None:
            verdict = best_verdict_in(self.artifact_dir, self.best_step, self.best_speedup_vs_eager) \
                if self.correct and self.artifact_dir else None
            cached = verdict_facts(verdict) or {}
            self.__dict__["_facts_read"] = cached
        return cached

    def baseline_roofline_fractions(self) -> tuple[float | None, float | None]:
        """(eager, torch.compile): each baseline's fraction of the roofline floor, floor / its median. From the
        best verdict's floor and medians when known, else from the best kernel's fraction and speedups (the
        same numbers: kernel fraction / speedup over a baseline = floor / baseline median)."""
        facts = self.facts()
        floor = _num(facts.get("floor_ms"))
        out: list[float | None] = []
        for key, speedup in (("eager_ms", self.best_speedup_vs_eager), ("compile_ms", self.best_speedup_vs_compile)):
            ms = _num(facts.get(key))
            frac = _num(self.best_roofline_fraction)
            if floor and ms:
                out.append(floor / ms)
            elif frac and _num(speedup):
                out.append(frac / float(speedup))
            else:
                out.append(None)
        return out[0], out[1]

    def conclusion(self) -> RunConclusion:
        """What the run found and what to do with it (see the module docstring)."""
        if not self.correct:
            return RunConclusion("no_correct_kernel", "keep PyTorch",
                           f"no correct kernel in {self.evaluations} evaluation(s) ({self.stop_reason})")
        s, c = _num(self.best_speedup_vs_eager), _num(self.best_speedup_vs_compile)
        eager_frac, comp_frac = self.baseline_roofline_fractions()
        facts = self.facts()
        if s is None:
            return RunConclusion("untimed", "time the kernel before using it",
                           "a correct kernel was found, but its speed was not measured against eager PyTorch",
                           eager_roofline_fraction=eager_frac, compile_roofline_fraction=comp_frac)
        fracs = {"eager_roofline_fraction": eager_frac, "compile_roofline_fraction": comp_frac}
        if s >= 1 + NOISE:
            if c is None or c >= 1 + NOISE:
                summary = f"faster than eager PyTorch: best {s:.2f}x over eager, " + (
                    f"{c:.2f}x over torch.compile" if c is not None else "torch.compile not timed")
                return RunConclusion("faster", "use the kernel", summary, **fracs)
            if c > 1 - NOISE:
                return RunConclusion("faster_than_eager_only", "use torch.compile or the kernel",
                               f"faster than eager PyTorch ({s:.2f}x), on par with torch.compile ({c:.2f}x, "
                               f"within timing noise)", _roofline_why("torch.compile", comp_frac, facts, lost=False),
                               **fracs)
            return RunConclusion("faster_than_eager_only",
                           "use torch.compile (the kernel only where torch.compile is not an option)",
                           f"faster than eager PyTorch ({s:.2f}x) but not than torch.compile ({c:.2f}x)",
                           _roofline_why("torch.compile", comp_frac, facts, lost=True), **fracs)
        best = f"best correct {s:.2f}x" + (f", {c:.2f}x over torch.compile" if c is not None else "")
        summary = (f"no kernel beat eager PyTorch ({best})" if s <= 1.0 else
                   f"no kernel beat eager PyTorch by more than timing noise ({best})")
        return RunConclusion("not_faster", "keep PyTorch", summary,
                       _roofline_why("eager PyTorch", eager_frac, facts, lost=True), **fracs)

    def headline(self) -> str:
        o = self.conclusion()
        if o.kind == "no_correct_kernel":
            return f"{self.task}: {o.sentence()}"
        where = (f"step {self.best_step}, " if o.beat_eager or o.kind == "untimed" else "") + \
            f"{self.evaluations} evaluation(s), {self.coder}"
        return f"{self.task}: {o.sentence()} ({where})"
