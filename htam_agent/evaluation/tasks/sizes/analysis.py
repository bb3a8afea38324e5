"""What a task file reads: the module-level size globals (slots) its reference depends on, from source and bytecode."""

from __future__ import annotations

import dis
import re
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .... import threadsafe
from .budget import _GLOBAL_LOADS, _NOT_SIZE_TOKENS, _ROOTS, BATCH_FLOOR, FLOOR


@dataclass(frozen=True)
class Slot:
    """One size that can change: an int global, or one group of equal elements of a tuple/list global."""

    name: str
    index: tuple[int, ...]  # () for an int global
    default: int
    floor: int
    order: int

    @property
    def label(self) -> str:
        return self.name if not self.index else f"{self.name}[{','.join(map(str, self.index))}]"


@dataclass
class _Assign:
    names: tuple[str, ...]
    code: types.CodeType
    deps: frozenset[str]
    order: int


@dataclass
class _Analysis:
    code: types.CodeType
    assigns: list[_Assign]
    slots: list[Slot]
    fixed: dict[str, Any]  # size-like globals read but kept, with their values
    notes: dict[str, str] = field(default_factory=dict)  # global -> why it is not scaled
    literals: dict[str, list[int]] = field(default_factory=dict)  # where -> int literals above FLOOR


def _code_reads(code: types.CodeType) -> set[str]:
    """Names a code object (and the code nested in it) loads as globals."""
    names: set[str] = set()
    for ins in dis.get_instructions(code):
        if ins.opname in _GLOBAL_LOADS and isinstance(ins.argval, str):
            names.add(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_reads(const)
    return names


def _name_loads(node: Any) -> set[str]:
    import ast

    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _floor(name: str) -> int:
    return BATCH_FLOOR if "batch" in name.lower().split("_") or name.lower() in ("b", "bs", "n_batch") else FLOOR


def _not_size_reason(name: str) -> str | None:
    tokens = set(re.split(r"_+", name.lower()))
    hit = sorted(tokens & _NOT_SIZE_TOKENS)
    return f"named like a hyper-parameter ({hit[0]}), not a size" if hit else None


def _analyze(source: str, path: Path, module: types.ModuleType) -> _Analysis:
    """Find the size globals of an executed task module (see the module docstring for the rule)."""
    import ast

    tree = threadsafe.parse(source, str(path))
    code = compile(source, str(path), "exec")
    bound: dict[str, int] = {}  # how many top-level statements bind each name
    assigns: list[_Assign] = []
    class_bases: dict[str, set[str]] = {}
    for order, stmt in enumerate(tree.body):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = tuple(t.id for t in targets if isinstance(t, ast.Name))
            if stmt.value is not None and len(names) == len(targets):  # a = 1, a = b = 1
                segment = ast.get_source_segment(source, stmt)
                if segment:
                    assigns.append(_Assign(names, compile(segment, str(path), "exec"),
                                           frozenset(_name_loads(stmt.value)), order))
            elif (isinstance(stmt, ast.Assign) and len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List))
                  and isinstance(stmt.value, (ast.Tuple, ast.List)) and len(targets[0].elts) == len(stmt.value.elts)
                  and all(isinstance(t, ast.Name) for t in targets[0].elts)):
                # `height, width = 224, 224`: one assignment per name, so each can change alone
                for t, v in zip(targets[0].elts, stmt.value.elts, strict=True):
                    segment = ast.get_source_segment(source, v)
                    if segment:
                        assigns.append(_Assign((t.id,), compile(f"{t.id} = ({segment})", str(path), "exec"),
                                               frozenset(_name_loads(v)), order))
            bound_here = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound_here = {stmt.name}
            if isinstance(stmt, ast.ClassDef):
                class_bases[stmt.name] = set().union(*(_name_loads(b) for b in stmt.bases)) if stmt.bases else set()
        else:
            bound_here = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for n in bound_here:
            bound[n] = bound.get(n, 0) + 1
    assigned = {n for a in assigns for n in a.names}
    for a in assigns:
        a.deps = a.deps & assigned

    # Which globals the reference reads: bytecode of the top-level functions and classes, AST of assignments.
    code_of = {c.co_name: c for c in code.co_consts if isinstance(c, types.CodeType)}
    deps_of: dict[str, set[str]] = {}
    for a in assigns:
        for n in a.names:
            deps_of.setdefault(n, set()).update(a.deps)
    seen: set[str] = set()
    todo = [r for r in _ROOTS if r in module.__dict__]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        nxt: set[str] = set()
        if name in code_of:
            nxt |= _code_reads(code_of[name])
        nxt |= deps_of.get(name, set()) | class_bases.get(name, set())
        todo.extend(n for n in nxt if n not in seen and n in bound)

    slots: list[Slot] = []
    fixed: dict[str, Any] = {}
    notes: dict[str, str] = {}
    for a in assigns:
        for name in a.names:
            if name not in seen or name in _ROOTS:
                continue
            value = module.__dict__.get(name)
            ints = ([value] if _is_int(value) else list(value)
                    if isinstance(value, (tuple, list)) and value and all(_is_int(x) for x in value) else None)
            if ints is None:
                continue
            if a.deps:
                notes[name] = f"computed from {', '.join(sorted(a.deps))}: recomputed, not scaled"
                continue
            if bound.get(name, 0) > 1:
                fixed[name] = value
                notes[name] = "bound more than once at module level: kept"
                continue
            why = _not_size_reason(name)
            floor = _floor(name)
            if why is None and all(v <= floor for v in ints):
                why = f"{value} is at most {floor}: a flag, an index or a small count, kept"
            if why is not None:
                fixed[name] = value
                notes[name] = why
                continue
            if _is_int(value):
                slots.append(Slot(name, (), value, floor, len(slots)))
                continue
            groups: dict[int, list[int]] = {}
            for i, v in enumerate(ints):
                groups.setdefault(v, []).append(i)
            for v, idx in groups.items():
                if v > floor:
                    slots.append(Slot(name, tuple(idx), v, floor, len(slots)))
    literals: dict[str, list[int]] = {}
    if "get_inputs" in code_of:
        found = sorted({c for c in _code_consts(code_of["get_inputs"]) if _is_int(c) and c > FLOOR})
        if found:
            literals["get_inputs()"] = found
    for a in assigns:
        if a.deps and any(n in seen for n in a.names):
            found = sorted({c for c in _code_consts(a.code) if _is_int(c) and c > FLOOR})
            if found:
                literals[" = ".join(a.names)] = found
    return _Analysis(code, assigns, slots, fixed, notes, literals)


def _code_consts(code: types.CodeType) -> list[Any]:
    out: list[Any] = []
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out += _code_consts(c)
        elif isinstance(c, tuple):
            out += list(c)
        else:
            out.append(c)
    return out
