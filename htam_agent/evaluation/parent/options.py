"""The evaluator's command-line options, declared once: `python -m htam_agent.evaluation eval|batch` (argparse,
here) and `htam eval` (typer, htam_agent/cli/evaluator.py) are both built from `EVAL_OPTIONS`, and both turn the parsed
values into `EvalOptions` and a verdict store with `eval_options` and `verdict_store`.

Standard library only (with the evaluator's own modules): the evaluation package runs on a bare GPU host, so
the typer side of the definition lives in cli.py. A default, a help text or a choice list lives in one place:
here, and the defaults that `EvalOptions` has are read from it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from htam_agent.backend_registry import REGISTRY, is_cpu, spec

from ..backends import BACKEND_NAMES
from ..tasks import SIZES
from .store import VerdictStore

TIERS = ("bare", "default", "thorough")  # read by the checker from the job (inputs.trial_plan)


@dataclass
class EvalOptions:
    """How to evaluate. Every field that changes a verdict is part of the verdict store's key."""

    backend: str = "cuda"
    size: str | None = None  # None: the backend's default size when the task has it ('small' on the CPU)
    alt_size: str | None = "alt"  # second shape checked (cheat pattern 12); None to skip
    trials: int = 5
    # Checks to run: "default" (what the agent uses: every anti-cheat check that catches patterns 1-13 and
    # most of 14-18), "thorough" (more trials, repeated calls, more re-checked timed outputs), "bare"
    # (correctness trials and timing only: a baseline to measure the checks' cost, never for the agent).
    tier: str = "default"
    timing: bool = True
    baselines: tuple[str, ...] = ("eager", "compile")
    timing_plan: dict[str, Any] = field(default_factory=dict)
    compile_timeout_s: float = 600.0
    run_timeout_s: float = 180.0
    threads: int | None = None
    device_index: int = 0
    build_root: str | None = None
    keep_scratch: bool = False
    prestart: bool = True  # start the next checker process while this one runs
    fast_build: bool = True  # content-addressed builds, per-flag PCH, device arch only
    # The eager baseline timed beside each candidate, in blocks that alternate between the two (the
    # candidate's sandbox frozen while the reference runs), rather than once on its own: None means on for
    # the CPU backends, whose machines drift (timing_fairness in docs/evaluation.md), off on a GPU.
    paired_eager: bool | None = None
    # A task whose footprint x MEMORY_FACTOR + 1 GiB does not fit the device's free memory (host RAM on the CPU)
    # at the size asked runs at the largest size that fits, the verdict saying so (parent/fit.py); False runs it
    # as asked.
    fit: bool = True

    def __post_init__(self) -> None:
        if self.tier not in TIERS:
            raise ValueError(f"unknown tier {self.tier!r}; choose one of: {', '.join(TIERS)}")
        spec(self.backend)  # an unknown backend raises, naming the choices
        self.baselines = tuple(self.baselines)

    def pairs_eager(self) -> bool:
        """Whether candidates are timed beside their eager baseline (`paired_eager`, resolved)."""
        on = is_cpu(self.backend) if self.paired_eager is None else self.paired_eager
        return bool(on and self.timing and "eager" in self.baselines)

    def separate_baselines(self) -> tuple[str, ...]:
        """The baselines measured in a job of their own before a candidate's: all of them, less eager when it is
        timed beside each candidate (the paired figure is the one of record; the separate one is measured only
        when pairing fails, `Evaluator.evaluate`). On the 2-core VM the separate eager timing of a 1 GiB ReLU cost
        ~13 s for a figure no verdict used."""
        return tuple(b for b in self.baselines if not (b == "eager" and self.pairs_eager()))

    def key_fields(self) -> dict[str, Any]:
        """Fields that decide the verdict (timeouts and paths do not)."""
        fields_ = {"alt_size": self.alt_size, "trials": self.trials, "timing": self.timing, "tier": self.tier,
                   "threads": self.threads if is_cpu(self.backend) else None}
        if self.pairs_eager():  # only when on, so that the keys of unpaired verdicts stay as they were
            fields_["paired_eager"] = True
        return fields_

    def resolve_size(self, task_source: str, task_path: str = "<task>",
                     has: Callable[[str], bool] | None = None) -> str:
        """The size to evaluate at: the one asked for; else the backend's default size ('small' on the CPU)
        when the task has one (its SMALL_SIZES, or one derived from its size globals: KernelBench files carry
        no dicts). `has` answers that from facts already found (the evaluator's); else the task is read here."""
        if self.size:
            return self.size
        want = spec(self.backend).default_size
        if want != "default":
            if has is None:
                from ..tasks import has_size

                return want if has_size(task_source, want, task_path) else "default"
            if has(want):
                return want
        return "default"


_DEFAULTS = {f.name: f.default for f in fields(EvalOptions)}


@dataclass(frozen=True)
class OptionSpec:
    """One option. `type` is str, int or float; bool is a flag that is off unless given (`--no-timing`)."""

    dest: str          # the parsed value's name, e.g. "compile_timeout"
    type: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")


EVAL_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("backend", str, None,
               "; ".join(f"{s.name}: {s.description}" for s in REGISTRY.values())
               + " (default: detected from the candidate source)", BACKEND_NAMES),
    OptionSpec("size", str, None, "the task's size (default: small on cpp, else default)", SIZES),
    OptionSpec("trials", int, _DEFAULTS["trials"], "correctness trials (random inputs) per candidate"),
    OptionSpec("tier", str, _DEFAULTS["tier"],
               "checks: default (the agent's), thorough (slower, more trials), bare (no anti-cheat; for measuring "
               "their cost)", TIERS),
    OptionSpec("no_alt", bool, False, "skip the second-shape check"),
    OptionSpec("no_timing", bool, False, "check correctness only (no timing, no baselines)"),
    OptionSpec("baselines", str, ",".join(_DEFAULTS["baselines"]), "comma list of eager,compile; empty for none"),
    OptionSpec("pairing", str, "auto",
               "time the eager baseline beside each candidate, interleaved (on), or once on its own (off); auto: "
               "on for the CPU backends", ("auto", "on", "off")),
    OptionSpec("compile_timeout", float, _DEFAULTS["compile_timeout_s"], "seconds allowed to compile"),
    OptionSpec("run_timeout", float, _DEFAULTS["run_timeout_s"], "seconds allowed for each later phase"),
    OptionSpec("threads", int, _DEFAULTS["threads"], "CPU threads for the cpp backend (default: all cores)"),
    OptionSpec("no_fit", bool, False, "run at the size asked even when the task does not fit the device's free "
               "memory (default: the largest size that fits, said in the verdict)"),
    OptionSpec("store", str, None, "verdict store folder (default: HTAM_VERDICT_DIR or ~/.cache/htam-agent/verdicts)"),
    OptionSpec("no_store", bool, False, "neither read nor write the verdict store"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add every option of `EVAL_OPTIONS` to an argparse parser."""
    for o in EVAL_OPTIONS:
        if o.type is bool:
            parser.add_argument(o.flag, dest=o.dest, action="store_true", help=o.help)
        else:
            shown = "" if o.default is None else f" (default: {o.default})"
            parser.add_argument(o.flag, dest=o.dest, type=o.type, default=o.default, choices=o.choices or None,
                                help=(o.help + shown).replace("%", "%%"))


def _values(values: Mapping[str, Any] | argparse.Namespace) -> Mapping[str, Any]:
    return vars(values) if isinstance(values, argparse.Namespace) else values


def parse_baselines(text: str) -> tuple[str, ...]:
    return tuple(b.strip() for b in text.split(",") if b.strip())


def eval_options(values: Mapping[str, Any] | argparse.Namespace, backend: str) -> EvalOptions:
    """The parsed options (an argparse Namespace or a dict by `dest`) as EvalOptions for one backend."""
    v = _values(values)
    return EvalOptions(
        backend=backend, size=v["size"], alt_size=None if v["no_alt"] else _DEFAULTS["alt_size"],
        trials=v["trials"], tier=v["tier"], timing=not v["no_timing"], baselines=parse_baselines(v["baselines"]),
        compile_timeout_s=v["compile_timeout"], run_timeout_s=v["run_timeout"], threads=v["threads"],
        paired_eager={"on": True, "off": False}.get(v.get("pairing") or "auto"), fit=not v.get("no_fit", False),
    )


def verdict_store(values: Mapping[str, Any] | argparse.Namespace) -> VerdictStore | None:
    """The verdict store the options ask for: None with --no-store, else --store or the default folder."""
    v = _values(values)
    return None if v["no_store"] else VerdictStore(v["store"])


__all__ = ["EVAL_OPTIONS", "TIERS", "EvalOptions", "OptionSpec", "add_arguments", "eval_options", "parse_baselines", "verdict_store"]
