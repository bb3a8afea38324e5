"""Every parse in the package goes through one lock (CPython 3.11 can fail building ASTs on several threads)."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

from htam_agent import threadsafe

PACKAGE = Path(__file__).resolve().parents[1] / "htam_agent"


def test_parses_never_overlap(monkeypatch):
    inside, most = 0, 0
    guard = threading.Lock()
    real = ast.parse

    def slow_parse(source, filename="<unknown>"):
        nonlocal inside, most
        with guard:
            inside += 1
            most = max(most, inside)
        time.sleep(0.002)
        try:
            return real(source, filename)
        finally:
            with guard:
                inside -= 1

    monkeypatch.setattr(ast, "parse", slow_parse)
    threads = [threading.Thread(target=lambda: [threadsafe.parse("x = 1") for _ in range(20)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1


def test_no_module_parses_around_the_lock():
    offenders = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                 if p.name != "threadsafe.py" and "ast.parse(" in p.read_text().replace("threadsafe.parse(", "")]
    assert offenders == []
