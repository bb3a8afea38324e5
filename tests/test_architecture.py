"""The package's layers (docs/architecture.md): a package imports only packages of lower layers (or its own).

Read from the source's import statements (lazy imports inside functions count too), so a shortcut upwards
fails here before it becomes an import cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "htam_agent"

# The one table of layers; docs/architecture.md shows the same.
LAYERS: dict[str, int] = {
    "backend_registry": 0, "threadsafe": 0,
    "bundled_tasks": 1,
    "evaluation": 2,
    "context": 3, "memory": 3, "state": 3,
    "coder": 4,
    "run": 5,
    "nodes": 6,
    "graph": 7,
    "agent": 8, "tools": 8,
    "bench": 9, "chat": 9,
    "ui": 10,
    "cli": 11,
    "__main__": 12,
}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "htam_agent"


def _imports(path: Path) -> set[str]:
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {_unit(a.name) for a in node.names if a.name.startswith("htam_agent.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: None if path.name == "__init__.py" else -1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "htam_agent":
                out |= {a.name for a in node.names}
            elif target.startswith("htam_agent."):
                out.add(_unit(target))
    return out


def test_every_unit_of_the_package_has_a_layer():
    units = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert units == set(LAYERS), f"give these a layer in LAYERS and docs/architecture.md: {units ^ set(LAYERS)}"


def test_no_package_imports_upwards():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        unit = rel.parts[0].removesuffix(".py")
        if unit == "__init__" or unit not in LAYERS:
            continue
        for target in _imports(path):
            if target in LAYERS and target != unit and LAYERS[target] >= LAYERS[unit]:
                upward.append(f"{rel} (layer {LAYERS[unit]}) imports {target} (layer {LAYERS[target]})")
    assert upward == []


def test_the_architecture_doc_shows_the_same_layers():
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    for unit, layer in LAYERS.items():
        if unit != "__main__":
            assert f"`{unit}" in doc, f"docs/architecture.md does not mention {unit} (layer {layer})"


# -- inside the evaluator: one room per process ---------------------------------------------------------
# `evaluation/` holds four processes, each in a folder of its own, and the leaves they share
# (docs/architecture.md, "The trust boundary"); only its `__init__.py` (a docstring) and `__main__.py` (the
# parent's entry, `python -m htam_agent.evaluation`) sit directly in it:
# - the parent (trusted, what callers import): `evaluation/parent/`; it starts the checker and the launcher by
#   module name and imports neither, nor the sandbox;
# - the launcher (trusted, forks pre-imported checkers): `evaluation/launcher/`; it imports the checker,
#   never the sandbox (a forked checker runs the sandbox's module by name), and nothing imports it (the
#   parent starts it by module name);
# - the checker (trusted): `evaluation/checker/`;
# - the sandbox (untrusted, runs the candidate): `evaluation/sandbox/`;
# - shared leaves, imported by all of them and importing none of them: `evaluation/common/`,
#   `evaluation/tasks/`, `evaluation/backends/`.
# No module of the evaluator imports, through any chain, a module that imports it back.
EVALUATION = PACKAGE / "evaluation"
PROCESSES = ("parent", "launcher", "checker", "sandbox")
SHARED = ("common", "tasks", "backends")


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def _targets(path: Path) -> set[str]:
    """Every `htam_agent...` module a file imports, full names (`from pkg import mod` counts as `pkg.mod`)."""
    module = _module_of(path)
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("htam_agent")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: None if path.name == "__init__.py" else -1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("htam_agent"):
                out.add(target)
                out |= {f"{target}.{a.name}" for a in node.names}
    return out


def _room(module: str) -> str | None:
    """parent, launcher, checker, sandbox or shared for a module of the evaluator, by its folder; None outside."""
    if not module.startswith("htam_agent.evaluation."):
        return None
    first = module.split(".")[2]
    if first in PROCESSES:
        return first
    if first in SHARED:
        return "shared"
    return "parent" if first == "__main__" else None  # `python -m htam_agent.evaluation`: the parent's entry


def _edges() -> dict[str, set[str]]:
    """file (relative to evaluation/) -> the rooms of the evaluator's modules it imports."""
    return {str(p.relative_to(EVALUATION)): {r for t in _targets(p) if (r := _room(t))}
            for p in EVALUATION.rglob("*.py")}


def test_every_module_of_the_evaluator_is_in_a_room():
    loose = sorted(str(p.relative_to(EVALUATION)) for p in EVALUATION.rglob("*.py")
                   if p.parent == EVALUATION and p.name not in ("__init__.py", "__main__.py"))
    assert loose == [], f"give each a folder of its process or of the shared leaves ({PROCESSES + SHARED})"
    folders = {p.name for p in EVALUATION.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(PROCESSES + SHARED), "a new folder of evaluation/: name its room here and in the docs"
    for process in PROCESSES:  # each process's folder says what it is
        assert (EVALUATION / process / "__init__.py").read_text().startswith('"""The'), process


def test_the_rooms_are_what_the_comment_says():
    edges = _edges()
    rooms = {_room(_module_of(EVALUATION / f)) for f in edges if f != "__init__.py"}
    assert rooms == {"parent", "launcher", "checker", "sandbox", "shared"}
    # the parser sees real edges (a check that saw none would pass vacuously)
    assert "shared" in edges["checker/phases.py"] and "shared" in edges["sandbox/server.py"]
    assert "checker" in edges["checker/__main__.py"] and "shared" in edges["parent/evaluator.py"]
    assert "checker" in edges["launcher/__main__.py"] and "parent" in edges["__main__.py"]


def test_the_parent_imports_no_other_process():
    bad = sorted(f"{f} imports the {r}" for f, rs in _edges().items()
                 if _room(_module_of(EVALUATION / f)) == "parent" for r in rs & {"checker", "sandbox", "launcher"})
    assert bad == [], "the parent starts the checker and the launcher by module name (`-m`); it imports neither"


def _module_graph(root: Path = EVALUATION) -> dict[str, set[str]]:
    """module -> the evaluator's modules it imports (lazy and TYPE_CHECKING imports count: a circle drawn only
    for the type checker is still one a reader must hold in their head). `from . import x` is an edge to the
    module x, not to the package; `from .pkg import name` one to pkg's __init__."""
    modules = {".".join(p.relative_to(root.parents[1]).with_suffix("").parts).removesuffix(".__init__"): p
               for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".")[: None if path.name == "__init__.py" else -1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                out |= {f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names}
        graph[module] = {m for m in out if m in modules and m != module}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_the_circle_check_finds_a_circle(tmp_path):
    """The circle the tree had (phases <-> timed_calls, one side for the type checker only) is found."""
    checker = tmp_path / "htam_agent" / "evaluation" / "checker"
    checker.mkdir(parents=True)
    for name, text in {"__init__": "", "judge": "",
                       "phases": "from . import judge\nfrom .timed_calls import time_candidate\n",
                       "timed_calls": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .phases import Run\n",
                       "inputs": "import htam_agent.evaluation.checker.judge\n"}.items():
        (checker / f"{name}.py").write_text(text)
    graph = _module_graph(checker.parent)
    assert graph["htam_agent.evaluation.checker.inputs"] == {"htam_agent.evaluation.checker.judge"}
    assert import_circles(graph) == [["htam_agent.evaluation.checker.phases",
                                      "htam_agent.evaluation.checker.timed_calls"]]
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_in_the_evaluator():
    graph = _module_graph()
    assert graph["htam_agent.evaluation.checker.timed_calls"] >= {"htam_agent.evaluation.checker.state"}
    assert import_circles(graph) == [], "split the module both sides need into a third (checker/state.py did)"


def test_the_sandbox_never_imports_the_checker_nor_the_parent():
    bad = sorted(f"{f} imports the {r}" for f, rs in _edges().items() if f.startswith("sandbox/")
                 for r in rs & {"checker", "parent"})
    assert bad == [], "the sandbox runs candidate code: it may import only common/, tasks/, backends/"


def test_the_checker_never_imports_the_sandbox_nor_the_parent():
    bad = sorted(f"{f} imports the {r}" for f, rs in _edges().items() if f.startswith("checker/")
                 for r in rs & {"sandbox", "parent", "launcher"})
    assert bad == [], ("the checker starts the sandbox by module name (`-m`) or runs the `serve` the launcher "
                       "hands it; it never imports the sandbox, the launcher nor the parent")


def test_no_room_mixes_the_checker_and_the_sandbox():
    bad = sorted(f for f, rs in _edges().items() if {"checker", "sandbox"} <= rs | {_room(_module_of(EVALUATION / f))})
    assert bad == [], "a file that runs with the checker's code and the sandbox's both: which side is it on?"


def test_nothing_imports_the_launcher():
    bad = sorted(f"{f} imports the launcher" for f, rs in _edges().items()
                 if not f.startswith("launcher/") and "launcher" in rs)
    assert bad == [], "the launcher is a process of its own, started by module name (forkserver.py)"


def test_shared_leaves_import_none_of_the_three_processes():
    bad = sorted(f"{f} imports the {r}" for f, rs in _edges().items() if f.split("/")[0] in SHARED
                 for r in rs - {"shared"})
    assert bad == [], "common/, tasks/ and backends/ are leaves: move what they need into common/"


def test_every_started_process_module_exists():
    """`python -m htam_agent.evaluation.X` strings in the package name packages with a __main__.py."""
    started = set()
    for p in EVALUATION.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    node.value.startswith("htam_agent.evaluation.") and " " not in node.value:
                started.add(node.value)
    assert {"htam_agent.evaluation.checker", "htam_agent.evaluation.sandbox",
            "htam_agent.evaluation.launcher"} <= started
    for name in started:
        folder = PACKAGE.parent.joinpath(*name.split("."))
        assert (folder / "__main__.py").exists() or folder.with_suffix(".py").exists(), name


# -- a verdict is read only through Readout -------------------------------------------------------------
# Outside `evaluation/`, no module subscripts or `.get()`s a verdict with one of its keys: `Readout` has a
# property or method for each thing callers want, so "accepted?", "how fast?" have one answer each.
# `state` is exempt: it sits on layer 3 and imports nothing (its one read, `not_evaluated`, filters the
# state's own records). NOT_MOVED_YET names the modules whose reads still wait for their Readout method.
NOT_MOVED_YET: set[str] = set()
_PRODUCERS = {"benchmark", "evaluate", "verify", "compile", "no_code", "not_evaluated"}


def _verdict_keys() -> set[str]:
    from htam_agent.evaluation.common.verdict import Verdict

    return set(Verdict.__annotations__) | {"error", "builds", "build_seconds", "wall_clock", "sandbox"}


def _is_verdict(node: ast.AST, tracked: set[str]) -> bool:
    """An expression that holds a verdict: a name saying so (or bound to one), `x["verdict"]`,
    `x.get("verdict")`, `... or {}` around one, a gateway/evaluator call that returns one."""
    if isinstance(node, ast.Name):  # `v` is what the code base calls a verdict in a short scope
        return "verdict" in node.id.lower() or node.id in tracked or node.id == "v"
    if isinstance(node, ast.Attribute):  # `.v`: the verdict a Readout holds, read raw behind its back
        return "verdict" in node.attr.lower() or node.attr == "v"
    if isinstance(node, ast.Subscript):  # x["verdict"], or one of a collection of verdicts: verdicts[k]
        return (isinstance(node.slice, ast.Constant) and node.slice.value == "verdict") or (
            isinstance(node.value, ast.Name) and "verdicts" in node.value.id.lower())
    if isinstance(node, ast.BoolOp):
        return any(_is_verdict(v, tracked) for v in node.values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "get" and isinstance(node.func.value, ast.Name) and \
                "verdicts" in node.func.value.id.lower():
            return True  # verdicts.get(key): one of a collection
        if node.func.attr == "get" and node.args and isinstance(node.args[0], ast.Constant):
            return node.args[0].value == "verdict"
        return node.func.attr in _PRODUCERS
    return False


def raw_verdict_reads(source: str, keys: set[str]) -> list[str]:
    """`line: expr[key]` for every read of a verdict key on a verdict expression in `source`."""
    tree = ast.parse(source)
    out = []
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        tracked: set[str] = set()
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            tracked = {a.arg for a in scope.args.args + scope.args.kwonlyargs
                       if a.annotation is not None and "Verdict" in ast.unparse(a.annotation)}
        nodes = list(ast.walk(scope))
        for n in nodes:  # assignments in source order are enough for the code we have
            if isinstance(n, ast.Assign) and _is_verdict(n.value, tracked):
                tracked |= {t.id for t in n.targets if isinstance(t, ast.Name)}
            if isinstance(n, ast.For) and isinstance(n.target, ast.Name) and isinstance(n.iter, ast.Call) and \
                    isinstance(n.iter.func, ast.Name) and n.iter.func.id == "VerdictStore":
                tracked.add(n.target.id)  # iterating the store yields verdicts
        for n in nodes:
            if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant):
                key, obj = n.slice.value, n.value
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and \
                    n.args and isinstance(n.args[0], ast.Constant):
                key, obj = n.args[0].value, n.func.value
            else:
                continue
            if key in keys and _is_verdict(obj, tracked):
                out.append(f"{n.lineno}: {ast.unparse(obj)}[{key!r}]")
    return sorted(set(out))


def test_the_raw_read_check_sees_the_patterns_callers_used():
    """The check must catch what the code did before Readout took over (issue 26), or it proves nothing."""
    keys = _verdict_keys()
    before = '''
def f(c, gateway, state):
    verdict = (c.get("verdict") or {})
    a = verdict.get("speedup_vs_eager")
    b = (c.get("verdict") or {}).get("accepted")
    v = gateway.benchmark(cand)
    d = v["status"]
    e = c["verdict"].get("not_evaluated")
    for x in VerdictStore():
        x.get("device_name")
    r = Readout(verdict)
    t = r.v.get("trials")
    return r.reason, state.get("status"), options["backend"]
'''
    found = raw_verdict_reads(before, keys)
    assert {f.split(": ", 1)[1] for f in found} == {
        "c.get('verdict') or {}['accepted']", "c['verdict']['not_evaluated']", "v['status']",
        "verdict['speedup_vs_eager']", "x['device_name']", "r.v['trials']"}, found


def test_no_raw_verdict_key_is_read_outside_the_evaluator():
    keys = _verdict_keys()
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        if rel.startswith("evaluation/") or rel == "state.py" or rel in NOT_MOVED_YET:
            continue
        bad += [f"{rel}:{hit}" for hit in raw_verdict_reads(path.read_text(), keys)]
    assert bad == [], "read these through evaluation.readout.Readout (add a property there if none fits)"
    for rel in NOT_MOVED_YET:  # the exceptions shrink: one that is clean must leave the list
        assert raw_verdict_reads((PACKAGE / rel).read_text(), keys), f"{rel} is clean: drop it from NOT_MOVED_YET"
