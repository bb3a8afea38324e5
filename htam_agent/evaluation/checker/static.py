"""Static checks on the candidate's source (cheat pattern 11): a fallback to PyTorch, or inheriting the reference.

Read by the checker from the source text alone, before the sandbox imports anything.
"""

from __future__ import annotations

import ast

from htam_agent import threadsafe

_TORCH_ROOTS = {"torch", "F", "nn", "np", "numpy"}


def _call_root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    if isinstance(node, ast.Call):  # super().forward(...)
        return _call_root(node.func)
    return node.id if isinstance(node, ast.Name) else None


def static_flags(source: str) -> list[tuple[str, str]]:
    """(flag, reason) for fallbacks to PyTorch in exception handlers and for inheriting the reference."""
    try:
        tree = threadsafe.parse(source)
    except SyntaxError:
        return []
    flags = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id == "Model":
                    flags.append(("inherits_reference",
                                  "ModelNew subclasses the reference Model; write the computation as a kernel"))
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                if any(isinstance(n, ast.Raise) for n in ast.walk(handler)):
                    continue  # re-raises: validation with a better message, not a fallback
                for sub in ast.walk(handler):
                    if isinstance(sub, ast.Call):
                        root = _call_root(sub.func)
                        if root in _TORCH_ROOTS or root == "super":
                            flags.append(("fallback",
                                          f"an exception handler (line {handler.lineno}) falls back to PyTorch; "
                                          "a failing kernel must fail, not be replaced"))
                            break
                else:
                    continue
                break
    return flags
