"""Plain words for a person: what a verdict means and what to change, and what a pasted task lacks.

Verdicts are read only through `Readout` (the evaluator's one reader), so the chat says "compiled?", "how
fast?" and "why rejected?" the same way as the CLI and the prompts.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from htam_agent import threadsafe
from htam_agent.evaluation.parent.readout import Readout

_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n(.*?)```", re.S)

#: what to do next, per status (the verdict's own reason says what happened)
_NEXT = {
    "compile_error": "fix the code so it compiles: the compiler's first error is below",
    "invalid_candidate": "the file must define `class ModelNew(nn.Module)` with the same forward() signature as "
                         "`Model`, written for the run's backend",
    "incorrect": "the kernel computes a different result than the reference: check indexing, the reduction "
                 "and boundary handling on the trial that failed",
    "runtime_error": "the kernel crashed when called: check the launch configuration, shapes and dtypes",
    "out_of_memory": "the kernel ran out of memory: allocate less (reuse buffers, smaller tiles)",
    "timeout": "the kernel ran past the time limit: look for an endless loop or a far too slow mapping",
    "crashed": "the candidate's process died (a segfault or an abort): check out-of-bounds accesses",
    "rejected": "the anti-cheat checks refused it: the kernel itself must compute the result, on every call, "
                "for the inputs it is given",
}


def strip_fences(text: str) -> str:
    """The code of a pasted reply: the first fenced block when there is one, else the text as it is."""
    m = _FENCE.search(text)
    return (m.group(1) if m else text).strip() + "\n"


def task_problems(source: str) -> list[str]:
    """What a pasted task lacks to be a KernelBench task, all at once (empty: it looks complete).

    Static (no code runs): a syntax error, then each missing piece with how to add it."""
    try:
        tree = threadsafe.parse(source)
    except SyntaxError as exc:
        return [f"line {exc.lineno}: syntax error: {exc.msg}; fix the Python syntax"]
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    out: list[str] = []
    model = classes.get("Model")
    if model is None:
        out.append("no `class Model(nn.Module)`: the reference operator, with its computation in forward()")
    elif not any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in model.body):
        out.append("`Model` has no `forward(self, ...)` method: put the computation to speed up there")
    if "get_inputs" not in funcs:
        out.append("no `get_inputs()` function: `def get_inputs(): return [torch.randn(...), ...]`, the "
                   "arguments of forward()")
    if "get_init_inputs" not in funcs:
        out.append("no `get_init_inputs()` function: `def get_init_inputs(): return []` (the arguments of "
                   "Model's constructor)")
    return out


def check_task_source(source: str, name: str = "pasted_task.py") -> str | None:
    """None when `source` loads as a task, else one message that lists what is missing or what failed."""
    problems = task_problems(source)
    if not problems:
        from htam_agent.evaluation.tasks import TaskError, load_task_source

        try:
            load_task_source(source, Path(name), size="default", check_inputs=True)
        except TaskError as exc:
            problems = [str(exc).removeprefix(f"{name}: ")]
    if not problems:
        return None
    return (f"this is not a KernelBench task yet ({name}):\n" + "\n".join(f"- {p}" for p in problems)
            + "\nA task defines `class Model(nn.Module)` with forward(), `get_inputs()` and `get_init_inputs()`.")


def explain(verdict: dict[str, Any] | None, label: str = "the candidate") -> str:
    """A verdict in plain words: what happened, on which trial, how fast, and what to change."""
    r = Readout(verdict)
    if not r.v:
        return f"{label} has no verdict recorded (it was not evaluated)"
    if r.accepted:
        parts = [f"{label} was accepted: it computed the same result as the reference on every trial"]
        eager, comp, frac = r.speedup_vs_eager, r.speedup_vs_compile, r.roofline_fraction
        if eager is not None:
            parts.append(f"it runs {eager:.2f}x " + ("faster than" if eager >= 1 else "the speed of")
                         + " eager PyTorch" + (f" and {comp:.2f}x torch.compile" if comp is not None else ""))
        if frac is not None:
            parts.append(f"it reaches {100 * frac:.0f}% of the roofline"
                         + (" (little left to gain)" if frac >= 0.7 else " (a faster kernel may exist)"))
        if r.flag_names:
            parts.append("warnings: " + ", ".join(dict.fromkeys(r.flag_names)))
        return "; ".join(parts) + "."
    lines = [f"{label} was not accepted ({r.status.replace('_', ' ')})."]
    if r.reason:
        lines.append(f"What the evaluator saw: {r.reason}")
    failed = r.failed_trials
    if failed:
        t = failed[0]
        err = t.get("max_abs_err")
        lines.append(f"It failed on trial {t.get('trial')!s}" + (f" (max abs error {err:.3g})" if err is not None
                                                                  else "")
                     + (f": {t['detail']}" if t.get("detail") else "") + ".")
    if r.flag_names:
        lines.append("Anti-cheat flags: " + ", ".join(dict.fromkeys(r.flag_names)) + ".")
    if r.failed_to_compile and r.status == "runtime_error":
        lines.append("What to change: it failed to compile at its first call; " + _NEXT["compile_error"] + ".")
    else:
        lines.append("What to change: " + _NEXT.get(r.status, "read the evaluator's reason above") + ".")
    if r.status == "compile_error":
        tail = r.feedback().split("compiler output (tail):\n", 1)
        if len(tail) == 2:
            first = [ln for ln in tail[1].splitlines() if "error" in ln.lower()][:3]
            if first:
                lines.append("Compiler: " + " | ".join(ln.strip()[:200] for ln in first))
    return "\n".join(lines)
