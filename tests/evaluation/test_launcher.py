"""Checkers forked from the launcher (launcher/, parent/launcher_client.py), and the sandboxes they fork.

A forked sandbox must be what a freshly started one is: its own session, its uid (when root), no capability
but the one it may keep, only its socket and stdio open (nothing of the checker's or the launcher's: a
control socket left open would let a candidate ask the launcher for a root process), no writable memory
shared with the checker but the input buffers it is given, dumpable as an exec would leave it. The candidate below reports exactly that from inside the sandbox, at import, as its error.
"""

from __future__ import annotations

import ctypes  # noqa: F401  (used by the probe's source)
import json
import os
import re
import signal
import time

import pytest

from htam_agent.bundled_tasks import SUITE_DIR
from htam_agent.evaluation.common.containment import privileges, sandbox_uid
from htam_agent.evaluation.parent import launcher_client, pool
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions

pytestmark = pytest.mark.skipif(not launcher_client.enabled(), reason="the launcher serves on Linux only")

PROBE = r'''
import ctypes, json, os, tempfile
import torch
from torch.utils.cpp_extension import load_inline  # the cpp backend's static check looks for a kernel


def _facts():
    fds = {}
    for f in os.listdir("/proc/self/fd"):
        try:
            fds[f] = os.readlink(f"/proc/self/fd/{f}")
        except OSError:
            pass  # the listing's own descriptor, closed by now
    status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
    dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
    shared = [line for line in open("/proc/self/maps").read().splitlines()  # writable and shared with someone
              if line.split()[1].endswith("s") and "w" in line.split()[1] and "memfd:htam-in" not in line]
    return {"pid": os.getpid(), "sid": os.getsid(0), "uid": os.getuid(), "fds": fds,
            "cap_eff": int(status["CapEff"], 16), "dumpable": dumpable, "home": os.environ.get("HOME"),
            "cwd": os.getcwd(), "shared": shared,
            "tempdir": tempfile.gettempdir(), "mark": os.environ.get("HTAM_TEST_MARK")}


raise RuntimeError("FACTS" + json.dumps(_facts()) + "END")

_ext = load_inline(name="never_built", cpp_sources="", functions=[])


class ModelNew(torch.nn.Module):
    pass
'''


def _facts(verdict: dict) -> dict:
    text = json.dumps(verdict)
    found = re.search(r"FACTS(.*?)END", text.replace('\\"', '"'))
    assert found, f"the probe's facts are not in the verdict: {verdict.get('reason')}"
    return json.loads(found.group(1))


@pytest.fixture
def evaluator(build_root: str) -> Evaluator:
    return Evaluator(EvalOptions(backend="cpp", baselines=(), timing=False, build_root=build_root), store=None)


def test_a_forked_sandbox_is_boxed_like_a_fresh_one(evaluator, monkeypatch):
    monkeypatch.setenv("HTAM_TEST_MARK", "this evaluation's")  # a running launcher serves it: the request carries it
    pool._shutdown_spares()  # a spare started before the change has the environment of its start
    v = evaluator.evaluate(Candidate(task_path=str(SUITE_DIR / "elementwise_leaky_relu.py"), source=PROBE),
                           use_store=False)
    assert v["status"] == "compile_error", v["reason"]
    facts = _facts(v)
    assert v["phase_seconds"]["imports"] < 0.5, "the checker was not forked from the launcher"
    assert facts["sid"] == facts["pid"], "the sandbox is not a session of its own"
    assert sorted(facts["fds"]) == ["0", "1", "2", "3"], f"descriptors left open in the sandbox: {facts['fds']}"
    assert facts["fds"]["3"].startswith("socket:") and facts["fds"]["0"] == os.devnull
    assert all(facts["fds"][f].startswith(facts["cwd"]) for f in ("1", "2")), facts["fds"]
    assert facts["home"] == facts["cwd"], "the sandbox's environment is not its own"
    assert facts["mark"] == "this evaluation's", "the checker's environment is its launcher's, not its job's"
    assert facts["tempdir"] == os.path.join(facts["cwd"], "tmp"), "tempfile kept the launcher's folder"
    assert facts["dumpable"] == 1
    assert facts["shared"] == [], "memory the sandbox shares with another process, other than its input buffers"
    if os.geteuid() == 0 and not isinstance(sandbox_uid.sandbox_user(), str):
        assert facts["uid"] >= sandbox_uid.UID_BASE
        assert facts["cap_eff"] in (0, 1 << privileges.CAP_DAC_READ_SEARCH), hex(facts["cap_eff"])


def _spawn(tmp_path, env: dict[str, str]) -> launcher_client.Launched:
    r, w = os.pipe()
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        launched = launcher_client.spawn(tmp_path, env, out, err, w)
    os.close(w)
    assert launched is not None
    launched.stdin.close()  # no job: the checker kills its sandbox and leaves
    assert launched.wait(timeout=60) == 0
    os.close(r)
    return launched


def test_a_changed_environment_or_a_dead_launcher_gets_a_new_launcher(tmp_path):
    env = pool.scrubbed_env()
    _spawn(tmp_path, env)
    first = launcher_client._current
    assert first is not None
    _spawn(tmp_path, env)
    assert launcher_client._current is first  # the same environment: the same launcher
    _spawn(tmp_path, {**env, "HTAM_TEST_MARK": "1", "PYTEST_CURRENT_TEST": "another test"})
    assert launcher_client._current is first  # read only when needed: the checker gets them, the launcher stays
    _spawn(tmp_path, {**env, "OMP_NUM_THREADS": "1"})
    second = launcher_client._current
    assert second is not first and first.proc.poll() is not None  # the old one was told to go, and went
    os.kill(second.proc.pid, signal.SIGKILL)
    second.proc.wait()
    assert second.folder.exists()  # killed: the parent's close removes it below
    _spawn(tmp_path, {**env, "OMP_NUM_THREADS": "1"})
    assert launcher_client._current is not second and launcher_client._current.proc.poll() is None
    assert not second.folder.exists() and not first.folder.exists()
    launcher_client.shutdown()


def test_a_launcher_whose_parent_dies_leaves_no_folder():
    """The parent killed (or ended by os._exit, as a CLI subprocess may be): no atexit closes the launcher;
    it sees its control socket close, removes its folder and goes."""
    import subprocess
    import sys

    code = ("import os, sys; from htam_agent.evaluation.parent import launcher_client, pool; "
            "l = launcher_client.Launcher(pool.scrubbed_env()); print(l.folder, l.proc.pid, flush=True); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    folder, pid = out.stdout.split()
    deadline = time.monotonic() + 60
    while (os.path.exists(folder) or launcher_client._alive(int(pid))) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not os.path.exists(folder), "the launcher's folder outlived its parent"
    assert not launcher_client._alive(int(pid)), "the launcher outlived its parent"


def test_htam_launcher_0_starts_fresh_interpreters(monkeypatch):
    monkeypatch.setenv("HTAM_LAUNCHER", "0")
    assert not launcher_client.enabled()
    spare = pool.Spare()
    try:
        assert not isinstance(spare.proc, launcher_client.Launched)
    finally:
        spare.proc.stdin.close()
        spare.proc.wait(timeout=60)
        pool._discard(spare)


def test_no_evaluator_module_reads_the_environment_at_import():
    """What launcher_client.LATE relies on: a launcher started before `HTAM_*` changed serves the change, because
    the evaluator reads its variables when it needs them, never in a module's top-level code."""
    import ast
    from pathlib import Path

    import htam_agent.evaluation as evaluation

    found = []
    for path in Path(evaluation.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        top += [n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body
                if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for stmt in top:
            if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test):
                continue
            for node in ast.walk(stmt):
                if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
                    found.append(f"{path.name}:{node.lineno}")
    assert found == [], f"read at import: {found}"
