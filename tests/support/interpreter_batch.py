"""Triton-interpreter checks in one subprocess per test module instead of one per case.

TRITON_INTERPRET must be set before triton is imported (and other tests may have imported it), so the checks
run in a subprocess; starting one per case paid torch's and triton's imports every time. A module's fixture
hands every selected case to one `python FILE --batch` process, which runs each check in turn and prints one
result line per case; each test then asserts its own line, so a failure still names its case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MARK = "@@HTAM_CASE "


def run_cases(script: str, cases: dict[str, list[str]], timeout_s: float) -> dict[str, dict[str, Any]]:
    """{case id: {"error": "" when it passed, else what went wrong; "value": what the check returned}}, from
    one `script --batch` process."""
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, script, "--batch", json.dumps(cases)], env=env, capture_output=True,
                          text=True, timeout=timeout_s)
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            one = json.loads(line[len(MARK):])
            results[one["id"]] = one
    died = {"error": f"the batch process ended (exit {proc.returncode}) before this case:\n{proc.stderr[-4000:]}",
            "value": None}
    return {case: results.get(case, died) for case in cases}


def main(check: Callable[..., Any]) -> None:
    """The subprocess's side: `check(*args)` for each case of the JSON argument, one result line each (with
    what it returned, which must be JSON)."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("set TRITON_INTERPRET=1 (the interpreter runs the kernels on CPU tensors)")
    for case, args in json.loads(sys.argv[2]).items():
        value = None
        try:
            value = check(*args)
            error = ""
        except BaseException:  # a failed assert or an error in the kernel: both are the case's
            error = traceback.format_exc()[-4000:]
        print(MARK + json.dumps({"id": case, "error": error, "value": value}), flush=True)
