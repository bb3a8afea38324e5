"""Prompt templates: load them from `htam_agent/prompts/` and render a CodeRequest into chat messages.

Templates are plain markdown with `{name}` placeholders. Only `{identifier}` patterns are placeholders, so
C++ and Python braces in the templates' code samples are left alone; a placeholder the renderer does not
provide is an error (never sent to the model half-filled). Substituted values are inserted verbatim.

Files (one per node and backend):
  system.md                  role, the evaluator's rules, the backend's candidate format ({format})
  format_<backend>.md        the exact candidate format for cuda, triton, cpp
  generate_<backend>.md      a fresh candidate: task, current best, direction, strategies, notes
  repair.md                  a repair (shared): failed code, the evaluator's reason, repair_hints_<backend>.md
  ask_again.md               the corrective message when a reply had no usable code

A folder passed as `prompts_dir` overrides individual files (to experiment with prompts without editing the
package); files it lacks come from the package.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from htam_agent.coder.base import CodeRequest, StrategyBrief

BACKEND_TITLES = {"cuda": "CUDA", "triton": "Triton", "cpp": "C++ (CPU, OpenMP)"}
#: what a reply of each backend must contain (for corrective messages)
BACKEND_EXPECTED = {
    "cuda": "a __global__ kernel, compiled by load_inline(cuda_sources=...) or torch.cuda._compile_kernel",
    "triton": "a @triton.jit kernel launched from forward",
    "cpp": "C++ compiled by load_inline(cpp_sources=...), with OpenMP, no CUDA",
}

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


@lru_cache(maxsize=64)
def _package_template(filename: str) -> str:
    try:
        return resources.files("htam_agent").joinpath("prompts", filename).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"prompt template {filename} is not in the package's prompts folder") from None


def load_template(filename: str, prompts_dir: str | Path | None = None) -> str:
    """A template's text: from `prompts_dir` when it has the file, else the packaged one."""
    if prompts_dir is not None:
        path = Path(prompts_dir) / filename
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return _package_template(filename)


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
    if not verdict:
        return "no verdict recorded"
    parts = [f"status {verdict.get('status', 'unknown')}"]
    eager = _num(verdict.get("speedup_vs_eager"))
    if eager is not None:
        parts.append(f"{eager:.2f}x vs eager PyTorch")
    comp = _num(verdict.get("speedup_vs_compile"))
    if comp is not None:
        parts.append(f"{comp:.2f}x vs torch.compile")
    timing = verdict.get("timing") or {}
    cand = timing.get("candidate") if isinstance(timing, dict) else None
    median = _num(cand.get("median_ms")) if isinstance(cand, dict) else None
    if median is not None:
        parts.append(f"median {median:.4g} ms")
    roof = verdict.get("roofline") or {}
    fraction = _num(roof.get("fraction")) if isinstance(roof, dict) else None
    if fraction is not None:
        bound = roof.get("bound")
        parts.append(f"{100 * fraction:.0f}% of the roofline" + (f" ({bound}-bound)" if bound else ""))
    flags = verdict.get("flags")
    if flags:
        names = [str(f.get("name", f)) if isinstance(f, dict) else str(f) for f in flags]
        parts.append("flags: " + ", ".join(names))
    text = "; ".join(parts)
    reason = str(verdict.get("reason") or "").strip()
    return text + (f". Evaluator: {reason}" if reason else "")


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
        return "None retrieved: choose techniques that fit the direction."
    return "\n\n".join(strategy_block(s, request.backend) for s in request.strategies)


def _notes_section(request: CodeRequest) -> str:
    if not request.notes:
        return "None."
    return "\n".join(f"- {note.strip()}" for note in request.notes if note.strip()) or "None."


def _variant_section(request: CodeRequest) -> str:
    if request.variant <= 0:
        return ""
    return (f"This is candidate {request.variant + 1} of this step: take a different approach from the "
            f"obvious one (another tiling, mapping or block size), so the candidates do not duplicate "
            f"each other.\n\n")


def request_values(request: CodeRequest) -> dict[str, Any]:
    """Every placeholder value the templates may use, for one request."""
    if request.backend not in BACKEND_TITLES:
        raise PromptError(f"no prompts for backend {request.backend!r}; expected one of "
                          f"{', '.join(BACKEND_TITLES)}")
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
        "strategies": _strategies_section(request),
        "notes": _notes_section(request),
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
    backend = request.backend
    values["format"] = load_template(f"format_{backend}.md", prompts_dir).rstrip()
    system = render(load_template("system.md", prompts_dir), values, name="system.md")
    if is_repair(request):
        values["repair_hints"] = load_template(f"repair_hints_{backend}.md", prompts_dir).rstrip()
        user = render(load_template("repair.md", prompts_dir), values, name="repair.md")
        return RenderedPrompt(system, user, "repair")
    name = f"generate_{backend}.md"
    return RenderedPrompt(system, render(load_template(name, prompts_dir), values, name=name), "generate")


def render_ask_again(problem: str, backend: str, prompts_dir: str | Path | None = None) -> str:
    """The corrective message sent in the same conversation when a reply had no usable code."""
    values = {"problem": problem.strip().rstrip(".") + ".", "backend": backend,
              "expected": BACKEND_EXPECTED.get(backend, backend)}
    return render(load_template("ask_again.md", prompts_dir), values, name="ask_again.md")


def template_names() -> list[str]:
    """Every packaged template file name."""
    folder = resources.files("htam_agent").joinpath("prompts")
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".md"))


def dumps_request(request: CodeRequest) -> str:
    """A compact JSON description of a request (for trace metadata and artifacts)."""
    return json.dumps({"task": request.task_name, "backend": request.backend, "step": request.step,
                       "direction": request.direction, "repair": request.repair, "variant": request.variant,
                       "strategies": [s.id for s in request.strategies]})


__all__ = [
    "BACKEND_EXPECTED", "BACKEND_TITLES", "PromptError", "RenderedPrompt", "dumps_request", "is_repair",
    "load_template", "placeholders", "render", "render_ask_again", "render_request", "request_values",
    "strategy_block", "summarize_verdict", "template_names",
]
