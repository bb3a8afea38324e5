"""`ast.parse` behind a process-wide lock.

CPython 3.11 can raise "SystemError: AST constructor recursion depth mismatch" when several threads build
Python ASTs at once (python/cpython#106905). The agent parses task and candidate sources on parallel graph
branches and bench lanes (a bench run on 3.11.7 hit it once in 1200 runs), so every parse in the package goes
through here. Standard library only: the evaluator imports it on bare GPU hosts.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _LOCK:
        return ast.parse(source, filename)
