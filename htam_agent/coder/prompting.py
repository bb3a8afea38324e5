"""Prompt templates: load them from the `prompts/` folder and render a CodeRequest into chat messages.

Templates are plain markdown with `{name}` placeholders. Only `{identifier}` patterns are placeholders, so
C++ and Python braces in the templates' code samples are left alone; a placeholder the renderer does not
provide is an error (never sent to the model half-filled). Substituted values are inserted verbatim.

Files (one per node and backend):
  system.md                  role, the evaluator's rules, the backend's candidate format ({format})
  format_<backend>.md        the exact candidate format, one per backend of the registry (htam_agent/backend_registry.py)
  generate_<backend>.md      a fresh candidate: task, current best, what this task already measured ({tried}),
                             the memory's ranked directions as advice
                             ({advice}: evidence, the one suggested for this candidate), strategies, notes, and
                             the declaration line to end the reply with ({declare})
  repair.md                  a repair (shared): failed code, the evaluator's reason, repair_hints_<backend>.md
  ask_again.md               the corrective message when a reply had no usable code

Where a template is read from, first match per file (so an override folder may hold only the files it changes):
  1. the `prompts_dir` argument (LLMCoder(prompts_dir=...)),
  2. the folder named by the environment variable HTAM_PROMPTS_DIR,
  3. the repository's top-level `prompts/` folder, when running from a checkout (an editable install too),
  4. the copy shipped inside the installed package (`htam_agent/prompts/` in the wheel; setup.py maps it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htam_agent.backend_registry import REGISTRY, UnknownBackend
from htam_agent.backend_registry import spec as backend_spec
from htam_agent.coder.base import CodeRequest, StrategyBrief

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

#: how prompts name each backend (the registry's titles)
BACKEND_TITLES = {name: s.title for name, s in REGISTRY.items()}
#: what a reply of each backend must contain (for corrective messages; the registry's `expected`)
BACKEND_EXPECTED = {name: s.expected for name, s in REGISTRY.items()}

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MAX_SKETCH = 2500
_MAX_FEEDBACK = 4000


class PromptError(ValueError):
    """A template is missing or names a placeholder that the renderer does not provide."""


def placeholders(template: str) -> set[str]:
    return set(_PLACEHOLDER.findall(template))


def render(template: str, values: dict[str, Any], *, name: str = "template") -> str:
    """Fill `{name}` placeholders from `values`; an unknown placeholder raises PromptError."""
    missing = placeholders(template) - set(values)
    if missing:
        raise PromptError(f"prompt {name} needs {', '.join(sorted(missing))}, which the renderer does not "
                          f"provide")
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)


#: environment variable naming a folder whose templates win over the shipped ones, file by file
PROMPTS_ENV = "HTAM_PROMPTS_DIR"
_CHECKOUT_ROOT = Path(__file__).resolve().parents[2]


def shipped_prompts_dir() -> Path | Traversable:
    """The shipped templates: the repository's top-level `prompts/` in a checkout, else the installed package's
    copy (`htam_agent/prompts/`, put there by the build)."""
    top = _CHECKOUT_ROOT / "prompts"
    if (_CHECKOUT_ROOT / "pyproject.toml").is_file() and (top / "system.md").is_file():
        return top
    return resources.files("htam_agent").joinpath("prompts")


def override_dirs(prompts_dir: str | Path | None = None) -> list[Path]:
    """Folders searched before the shipped templates, first wins: `prompts_dir`, then $HTAM_PROMPTS_DIR."""
    env = os.environ.get(PROMPTS_ENV)
    return [Path(d).expanduser() for d in (prompts_dir, env) if d not in (None, "")]


@lru_cache(maxsize=64)
def _shipped_template(filename: str) -> str:
    try:
        return shipped_prompts_dir().joinpath(filename).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"prompt template {filename} is not in the shipped prompts folder "
                          f"({shipped_prompts_dir()})") from None


def load_template(filename: str, prompts_dir: str | Path | None = None) -> str:
    """A template's text: from `prompts_dir` or $HTAM_PROMPTS_DIR when it has the file, else the shipped one."""
    for folder in override_dirs(prompts_dir):
        path = folder / filename
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return _shipped_template(filename)


# ------------------------------------------------------------------------------------------------------
# sections
# ------------------------------------------------------------------------------------------------------
def _num(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def summarize_verdict(verdict: dict[str, Any] | None) -> str:
    """One short paragraph: status, speedups, roofline fraction and bound, the evaluator's reason."""
    from htam_agent.evaluation.parent.readout import Readout

    return Readout(verdict).brief()


def _current_section(request: CodeRequest) -> str:
    if not request.best_code:
        return "No candidate has been accepted yet; this is the first working version to write."
    return (f"Verdict: {summarize_verdict(request.best_verdict)}\n\n"
            f"```python\n{request.best_code.rstrip()}\n```\n\n"
            f"Improve on it (keep it correct); do not resubmit it unchanged.")


def _direction_section(request: CodeRequest) -> str:
    if not request.direction:
        return "No direction chosen: use your judgement about the bottleneck."
    name = request.direction.replace("_", " ")
    text = f"**{name}** (`{request.direction}`)"
    if request.direction_reason:
        text += f": {request.direction_reason.strip()}"
    return text


def headroom_text(verdict: dict[str, Any] | None) -> str:
    """Near the roofline, what is left: the least traffic (or work) the operator needs against what the best
    kernel's time would move at the measured ceiling. From the verdict's roofline facts through `Readout`:
    the floor is the minimum bytes (inputs read, outputs written once) at the measured bandwidth, so
    floor_ms x bandwidth is that minimum and the best's median x bandwidth is what its time could move. ''
    below NEAR_ROOFLINE or without the facts."""
    from htam_agent.evaluation.parent.readout import NEAR_ROOFLINE, Readout

    read = Readout(verdict)
    frac, facts = read.roofline_fraction, read.facts() or {}
    floor, best, bound = facts.get("floor_ms"), facts.get("candidate_ms"), facts.get("bound")
    if frac is None or frac < NEAR_ROOFLINE or not floor or not best or bound not in ("memory", "compute"):
        return ""
    if bound == "memory" and facts.get("bandwidth_GBps"):
        bw = facts["bandwidth_GBps"]
        least, moved = floor * bw / 1e3, best * bw / 1e3  # GB
        return (f"What is left at {frac:.0%} of the memory roofline: the least traffic this operator needs is "
                f"{least:.3g} GB (each input read and each output written once), {floor:.3g} ms at the measured "
                f"{bw:.0f} GB/s; the best kernel takes {best:.3g} ms, the time to move {moved:.3g} GB at that "
                f"bandwidth. The {moved - least:.2g} GB-equivalent left ({1 - floor / best:.0%} of its time) is "
                "traffic beyond the minimum (a second pass over the input, data re-read from DRAM, "
                "temporaries) or time not spent moving bytes (launch gaps, a tail wave, too few loads in "
                "flight). Choose what removes that, not a new mapping for its own sake.")
    if bound == "compute" and facts.get("fp32_tflops"):
        tf = facts["fp32_tflops"]
        least = floor * tf  # GFLOP (ms x TFLOP/s)
        return (f"What is left at {frac:.0%} of the compute roofline: the least work is {least:.3g} GFLOP, "
                f"{floor:.3g} ms at the measured {tf:.1f} TFLOP/s (FP32); the best kernel takes {best:.3g} ms, "
                f"so {1 - floor / best:.0%} of its time is beyond that: instruction overhead, stalls on memory, "
                "or work the floor does not count.")
    return ""


def _advice_section(request: CodeRequest) -> str:
    """The memory's ranked directions as advice with their evidence, the one suggested for this candidate first.

    Evidence is counts and gains in this operator class and in this task (policy.py's summary), not the score's
    arithmetic: a strong model can weigh "3 of 4 tries improved, typical x1.4" against what it sees in the code
    and the profile, and depart from the suggestion when they disagree."""
    if not request.advice:
        if not request.direction:
            return "No direction chosen: use your judgement about the bottleneck."
        return f"Suggested direction for this candidate: {_direction_section(request)}"
    names = {a.id: a.name or a.id.replace("_", " ") for a in request.advice}
    lines = []
    if request.direction:
        name = names.get(request.direction, request.direction.replace("_", " "))
        lines.append(f"Suggested for this candidate: **{name}** (`{request.direction}`)."
                     + (" The other candidates of this step explore other directions, so take this one unless "
                        "the evidence below or the current best's profile clearly says otherwise."
                        if request.variant > 0 else ""))
        lines.append("")
    lines.append("Directions ranked by the memory for this state, best first, with the evidence behind the rank:")
    for i, a in enumerate(request.advice, 1):
        mark = " (suggested)" if a.id == request.direction else ""
        lines.append(f"{i}. **{names[a.id]}** (`{a.id}`){mark}: {a.evidence.strip() or 'no evidence recorded'}")
    lines.append("")
    left = headroom_text(request.best_verdict)
    if left:
        lines.append(left)
        lines.append("")
    lines.append("This is advice, not an order: if the timing and roofline of the current best point to another "
                 "bottleneck, follow them, and say in your declaration what you applied.")
    return "\n".join(lines)


def _declare_section(request: CodeRequest) -> str:
    """How to declare what the code applies: one line the memory parses and learns from (not what was asked)."""
    if not request.direction and not request.advice:
        return ""
    ids = ", ".join(f"`{d}`" for d in direction_ids())
    listed = ", ".join(f"`{s.id}`" for s in request.strategies)
    return ("After the code block, end your reply with one line that says what the code really applies, in this "
            "form:\n\n"
            "APPLIED: direction=<direction id>; strategies=<strategy ids, comma-separated, or none>\n\n"
            f"Direction ids: {ids}." + (f" Strategy ids offered here: {listed} (name others by a short "
                                        "title if you used them)." if listed else ""))


@lru_cache(maxsize=1)
def direction_ids() -> tuple[str, ...]:
    """The memory's direction ids (the seed catalog; cheap: no vector store, no embeddings)."""
    from htam_agent.memory.catalog import load_catalog

    return tuple(load_catalog().direction_ids())


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + "\n... (truncated)"


def strategy_block(strategy: StrategyBrief, backend: str) -> str:
    lines = [f"### {strategy.title} (`{strategy.id}`)"]
    if strategy.summary:
        lines.append(strategy.summary.strip())
    if strategy.risks:
        lines.append(f"Risks: {strategy.risks.strip()}")
    if strategy.sketch:
        lines.append(f"Sketch ({backend}):\n```\n{_clip(strategy.sketch, _MAX_SKETCH)}\n```")
    return "\n".join(lines)


def _strategies_section(request: CodeRequest) -> str:
    if not request.strategies:
        if request.direction and request.step > 0:
            return ("None new: the strategies of this direction that fit this operator are already in the "
                    "current best or did not help here. Choose a technique of your own that fits the direction.")
        return "None retrieved: choose techniques that fit the direction."
    return "\n\n".join(strategy_block(s, request.backend) for s in request.strategies)


#: earlier attempts listed in a prompt (the newest; older ones are summarized by the advice's evidence)
MAX_TRIED = 8


def _tried_section(request: CodeRequest) -> str:
    """One line per candidate this task already measured (direction, strategies, verdict), newest last: real
    information for a model (what was tried on this very task and what it gave), so it does not resubmit it."""
    if not request.tried:
        return "Nothing yet: this is the task's first step." if request.step == 0 else "No measured candidate yet."
    shown = request.tried[-MAX_TRIED:]
    lines = []
    if len(request.tried) > len(shown):
        lines.append(f"({len(request.tried) - len(shown)} earlier attempts not listed)")
    for t in shown:
        what = f"`{t.direction}`" if t.direction else "no declared direction"
        if t.strategies:
            what += " with " + ", ".join(f"`{s}`" for s in t.strategies)
        lines.append(f"- step {t.step}: {what}: {t.outcome or 'no verdict'}")
    lines.append("")
    lines.append("Do not resubmit any of these; build on the current best, or take an approach not listed here.")
    return "\n".join(lines)


def _notes_section(request: CodeRequest) -> str:
    if not request.notes:
        return "None."
    return "\n".join(f"- {note.strip()}" for note in request.notes if note.strip()) or "None."


def _variant_section(request: CodeRequest) -> str:
    if request.variant <= 0 or request.advice:  # with advice, each candidate already has its own direction
        return ""
    return (f"This is candidate {request.variant + 1} of this step: take a different approach from the "
            f"obvious one (another tiling, mapping or block size), so the candidates do not duplicate "
            f"each other.\n\n")


def request_values(request: CodeRequest) -> dict[str, Any]:
    """Every placeholder value the templates may use, for one request."""
    try:
        backend_spec(request.backend)
    except UnknownBackend as exc:
        raise PromptError(f"no prompts for backend {request.backend!r}: {exc}") from None
    return {
        "task_name": request.task_name,
        "task_source": request.task_source.rstrip(),
        "backend": request.backend,
        "backend_title": BACKEND_TITLES[request.backend],
        "op_class": request.op_class,
        "step": request.step,
        "repair": request.repair,
        "variant_index": request.variant,
        "current": _current_section(request),
        "direction": _direction_section(request),
        "advice": _advice_section(request),
        "declare": _declare_section(request),
        "strategies": _strategies_section(request),
        "notes": _notes_section(request),
        "tried": _tried_section(request),
        "variant": _variant_section(request),
        "feedback": _clip(request.feedback or "(the evaluator gave no reason)", _MAX_FEEDBACK)
                    .replace("\n", "\n> "),
        "failed_code": (request.failed_code or "").rstrip(),
    }


# ------------------------------------------------------------------------------------------------------
# rendering
# ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RenderedPrompt:
    system: str
    user: str
    kind: str  # "generate" or "repair"

    def messages(self) -> list[Any]:
        from langchain_core.messages import HumanMessage, SystemMessage

        return [SystemMessage(content=self.system), HumanMessage(content=self.user)]

    def text(self) -> str:
        """Both messages as one document (for the artifact folder)."""
        return f"## system\n\n{self.system.rstrip()}\n\n## user\n\n{self.user.rstrip()}\n"


def is_repair(request: CodeRequest) -> bool:
    return request.repair > 0 and bool(request.failed_code)


def render_request(request: CodeRequest, prompts_dir: str | Path | None = None) -> RenderedPrompt:
    """The system and user messages for one request (a repair when `repair > 0` and failed code is given)."""
    values = request_values(request)
    spec = backend_spec(request.backend)
    values["format"] = load_template(spec.format_prompt, prompts_dir).rstrip()
    system = render(load_template("system.md", prompts_dir), values, name="system.md")
    if is_repair(request):
        values["repair_hints"] = load_template(spec.repair_hints_prompt, prompts_dir).rstrip()
        user = render(load_template("repair.md", prompts_dir), values, name="repair.md")
        return RenderedPrompt(system, user.rstrip() + "\n", "repair")
    name = spec.generate_prompt
    user = render(load_template(name, prompts_dir), values, name=name)
    return RenderedPrompt(system, user.rstrip() + "\n", "generate")  # an empty last section leaves no blank tail


def render_ask_again(problem: str, backend: str, prompts_dir: str | Path | None = None) -> str:
    """The corrective message sent in the same conversation when a reply had no usable code."""
    values = {"problem": problem.strip().rstrip(".") + ".", "backend": backend,
              "expected": BACKEND_EXPECTED.get(backend, backend)}
    return render(load_template("ask_again.md", prompts_dir), values, name="ask_again.md")


def template_names() -> list[str]:
    """Every shipped template file name."""
    return sorted(p.name for p in shipped_prompts_dir().iterdir() if p.name.endswith(".md"))


__all__ = [
    "BACKEND_EXPECTED", "BACKEND_TITLES", "PromptError", "RenderedPrompt", "is_repair",
    "load_template", "placeholders", "render", "render_ask_again", "render_request", "request_values",
    "headroom_text", "strategy_block", "summarize_verdict", "template_names",
]
