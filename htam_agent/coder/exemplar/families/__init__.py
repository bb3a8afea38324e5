"""One module per family; each exposes space/default/safe/moves/DIRECTION_MOVES/curated/render."""

from __future__ import annotations

import importlib
from types import ModuleType

FAMILY_MODULES = {"elementwise": "elementwise", "rowwise": "rowwise", "matmul": "matmul", "staged": "staged"}


def family_module(family: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{FAMILY_MODULES[family]}")
