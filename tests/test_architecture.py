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
    "backends": 0, "threadsafe": 0,
    "tasks": 1,
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
