"""Strategy cards learned from accepted kernels: what a kernel that beat the best did, kept as a level-2 strategy.

A card is distilled without any LLM call: the plan paragraph of the reply that wrote the kernel, the key excerpt of
its code (the kernels themselves, not the Python glue), the state it was written in and the gain it measured. It
is written for exactly one operator class and one backend, and for shapes near the task's (SHAPE_SPAN), so it is
retrieved for later tasks of that class, backend and size range and for no other. Its id is a hash of task, direction and kernel excerpt: the same kernel learned twice
(a resumed run, a second seed) is one card.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from .schema import MemoryState, Strategy

#: A candidate becomes a card when it beats the best so far (eager PyTorch before any accepted kernel) by this.
LEARN_MARGIN = 1.10
_MAX_PLAN = 700
_MAX_EXCERPT = 2000
_KERNEL_START = {
    "cuda": re.compile(r"^[^\n]*__global__[^\n]*$", re.MULTILINE),
    "triton": re.compile(r"^[ \t]*@triton\.jit[^\n]*$", re.MULTILINE),
    "cpp": re.compile(r"^[^\n]*(?:#pragma omp|\bat::parallel_for\b)[^\n]*$", re.MULTILINE),
}


def _braced_block(code: str, start: int) -> int:
    """End of the brace-balanced block that opens at or after ``start`` (len(code) when unbalanced)."""
    depth, opened = 0, False
    for i in range(start, len(code)):
        c = code[i]
        if c == "{":
            depth, opened = depth + 1, True
        elif c == "}":
            depth -= 1
            if opened and depth == 0:
                return i + 1
    return len(code)


def _python_block(code: str, start: int) -> int:
    """End of the decorated Python function that starts at ``start`` (next line at its indentation or less)."""
    lines = code[start:].splitlines(keepends=True)
    if not lines:
        return len(code)
    indent = len(lines[0]) - len(lines[0].lstrip())
    pos, seen_def = start, False
    for line in lines:
        stripped = line.strip()
        cur = len(line) - len(line.lstrip())
        if seen_def and stripped and cur <= indent and not stripped.startswith(("@", ")")):
            return pos
        seen_def = seen_def or stripped.startswith("def ")
        pos += len(line)
    return pos


def key_excerpt(code: str, backend: str, limit: int = _MAX_EXCERPT) -> str:
    """The kernels of a candidate (CUDA __global__ functions, @triton.jit functions, OpenMP loops), up to
    ``limit`` characters; the head of the file when none is found."""
    pat = _KERNEL_START.get(backend)
    parts: list[str] = []
    used = 0
    for m in pat.finditer(code) if pat else ():
        if backend == "triton":
            end = _python_block(code, m.start())
        elif backend == "cpp":  # the loop under the pragma
            end = _braced_block(code, m.end())
        else:
            end = _braced_block(code, m.start())
        chunk = code[m.start():end].strip("\n")
        if not chunk or (parts and chunk in parts[-1]):
            continue
        if used + len(chunk) > limit:
            if not parts:
                parts.append(chunk[:limit].rstrip() + "\n// ... (truncated)")
            break
        parts.append(chunk)
        used += len(chunk)
    if not parts:
        body = code.split("class ModelNew", 1)[0].strip() or code.strip()
        return body[:limit]
    return "\n\n".join(parts)


def plan_text(reply: str, limit: int = _MAX_PLAN) -> str:
    """The prose of a reply outside its code blocks (and outside reasoning), squeezed to one paragraph."""
    text = re.sub(r"<think>.*?</think>", " ", reply or "", flags=re.DOTALL | re.IGNORECASE)
    text = re.sub(r"(^|\n)[ \t]*(```|~~~).*?(\n[ \t]*\2[ \t]*(?=\n|$)|$)", " ", text, flags=re.DOTALL)
    text = re.sub(r"(?im)^\W*applied\W*[:=].*$", " ", text)  # the declaration line is data, not plan
    text = re.sub(r"^#+\s*", "", text, flags=re.MULTILINE)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def make_card(state: MemoryState, direction: str, direction_name: str, *, code: str, plan: str,
              speedup_after: float, built_on: Sequence[str] = (), task_id: str = "", run_id: str = "",
              step: int | None = None) -> Strategy:
    """A learned strategy from an accepted kernel that beat the state's best (see the module docstring)."""
    key = state.key
    before = state.speedup or 1.0
    gain = speedup_after / before
    excerpt = key_excerpt(code, key.backend)
    digest = hashlib.sha1(f"{task_id}\0{direction}\0{key.backend}\0{excerpt}".encode()).hexdigest()[:12]
    where = f"`{task_id}`" if task_id else "an earlier task"
    plan = plan.strip() or "(the reply gave no plan)"
    basis = f" It applied {', '.join(built_on)}." if built_on else ""
    return Strategy(
        id=f"learned-{key.op_class}-{key.backend}-{digest}",
        direction=direction,
        title=f"{direction_name} that worked on {where} (x{gain:.2f})",
        description=f"Learned from an accepted {key.backend} kernel for a {key.op_class} operator "
                    f"({key.bottleneck}-bound, {key.status.replace('_', ' ')}): {plan}{basis}",
        applicability={"op_classes": [key.op_class], "bottlenecks": [key.bottleneck], "backends": [key.backend],
                       "shapes": shape_bounds(state.shapes)},
        risks="Measured on one task and its shapes only: check tails, strides and sizes it did not see.",
        expected_effect=f"x{gain:.2f} over the best before it ({before:.2f}x -> {speedup_after:.2f}x over eager) "
                        f"on {where}",
        code_sketch={key.backend: excerpt},
        tags=["learned", *([task_id] if task_id else []), *built_on],
        source="learned",
        evidence={"task": task_id, "run_id": run_id, "step": step, "op_class": key.op_class,
                  "bottleneck": key.bottleneck, "status": key.status, "backend": key.backend,
                  "speedup_before": state.speedup, "speedup_after": speedup_after,
                  "log_gain": round(math.log(gain), 4)},
    )


#: a learned card applies to shapes within this factor of the task it was learned on (each fact on its own)
SHAPE_SPAN = 8


def shape_bounds(shapes: dict[str, int], span: int = SHAPE_SPAN) -> dict[str, tuple[int, int]]:
    """The shape bounds of a card learned on a task of these shapes: each fact within ``span`` either way (a
    kernel tuned for rows of 4,096 says little about rows of 393,216)."""
    return {k: (max(1, v // span), v * span) for k, v in sorted(shapes.items())}


def worth_a_card(state: MemoryState, speedup_after: float | None, margin: float = LEARN_MARGIN) -> bool:
    """Whether an accepted kernel beat the state's best (eager when there is none) by the margin."""
    return speedup_after is not None and speedup_after >= (state.speedup or 1.0) * margin
