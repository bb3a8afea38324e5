"""Processes and disk across the trust boundary (issue 25, classes 9 and 10): nothing outlives an evaluation.

Each attacker (`cpp/p19_escape_setsid_chain.py`, `cpp/p18_fill_shm_and_build_root.py`) is evaluated, then an
honest victim (`honest/h07_thread_pool_joined.py`, same task). Asserted: the attacker is turned down, none
of its processes is alive afterwards (a /proc scan for the names its processes give themselves), none of the
files it wrote is left, and the victim gets the verdict it gets alone: accepted, with a speedup over an
eager baseline measured after the attack within a sane factor of its solo run (the red team's escaped chain
inflated it 18x). Real checker and sandbox processes, real builds: the catalogue's shared extension only
(built once per session with the other cheat tests). The units at the end are fast and build nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from cheat_catalogue import HERE, NOT_ACCEPTED, task_path
from sync_extension import source_of

from htam_agent.evaluation.common.containment import landlock, process_tree, sandbox_uid, scratch_quota
from htam_agent.evaluation.parent import pool
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator, storable
from htam_agent.evaluation.parent.options import EvalOptions

TIMING_PLAN = {"target_s": 0.05, "min_reps": 5, "max_reps": 20}
TASK = str(task_path("elementwise_leaky_relu"))
CHAIN_NAME, FILL_NAME = "htam-p19-chain", "htam-p18-fill.bin"
# The victim's speedup after an attack over its solo run: never inflated past SANE (load left behind slows
# the eager baseline measured after the attack: 18x for the red team's chain); a loaded shared 2-core
# machine may slow either run, so the lower bound is looser.
SANE, SANE_LOW = 3.0, 1 / 6


def _evaluate(build_root: str, path: Path) -> dict:
    # A fresh Evaluator each time: the victim's eager baseline is measured after the attack, as in the
    # red team's run; no spare process started ahead (it would take the freed uid slot at once).
    opts = EvalOptions(backend="cpp", baselines=("eager",), timing_plan=TIMING_PLAN, build_root=build_root,
                       prestart=False)
    return Evaluator(opts, None).evaluate(Candidate(task_path=TASK, source=source_of(path)), use_store=False)


def _named(name: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and Path(f"/proc/{pid}/comm").read_text().strip() == name:
                found.append(int(pid))
        except OSError:
            pass
    return found


def _victim_matches_solo(build_root: str, solo: dict) -> None:
    v = _evaluate(build_root, HERE / "honest" / "h07_thread_pool_joined.py")
    assert v["accepted"], (v["status"], v["reason"])
    for run in (solo, v):  # the comparison needs the eager baseline measured after the attack
        assert run.get("speedup_vs_eager"), f"no eager baseline: {run.get('warnings')}"
    ratio = v["speedup_vs_eager"] / solo["speedup_vs_eager"]
    assert SANE_LOW < ratio < SANE, (v["speedup_vs_eager"], solo["speedup_vs_eager"])


@pytest.fixture(scope="module")
def solo(build_root) -> dict:
    pool._shutdown_spares()  # no checker started earlier with another environment
    v = _evaluate(build_root, HERE / "honest" / "h07_thread_pool_joined.py")
    assert v["accepted"], (v["status"], v["reason"])
    return v


@pytest.mark.slow
def test_setsid_chain_dies_with_its_sandbox_and_the_victim_is_timed_fairly(build_root, solo):
    a = _evaluate(build_root, HERE / "cpp" / "p19_escape_setsid_chain.py")
    assert a["status"] in NOT_ACCEPTED, (a["status"], a["reason"])
    assert not a.get("leftover_processes"), a.get("flags")
    assert _named(CHAIN_NAME) == []  # 65 processes when it ran; no bounded kill rounds: all of them gone
    _victim_matches_solo(build_root, solo)


@pytest.mark.slow
def test_fill_is_refused_outside_its_folders_and_removed_inside(build_root, solo):
    a = _evaluate(build_root, HERE / "cpp" / "p18_fill_shm_and_build_root.py")
    assert a["status"] in NOT_ACCEPTED, (a["status"], a["reason"])
    found = re.findall(r"P18_FILL (\{.*\})", a.get("sandbox_stderr_tail") or "")
    assert found, (a.get("sandbox_stderr_tail") or "")[-500:]
    wrote = json.loads(found[-1])
    if landlock.landlock_abi() >= 1:
        assert wrote["shm"] == wrote["tmp"] == wrote["var_tmp"] == 0, wrote
    assert wrote["build"] > 0 and wrote["scratch"] > 0, wrote  # it did fill its own folders ...
    left = [str(p) for p in [Path("/dev/shm", FILL_NAME), Path(tempfile.gettempdir(), FILL_NAME),
                             Path("/var/tmp", FILL_NAME), *Path(build_root).rglob(FILL_NAME),
                             *Path(tempfile.gettempdir()).glob(f"htam-sandbox-*/**/{FILL_NAME}")] if p.exists()]
    assert left == []  # ... and nothing of it is left
    _victim_matches_solo(build_root, solo)


@pytest.mark.slow
def test_scratch_quota_kills_the_filler_with_a_candidate_verdict(build_root, solo, monkeypatch):
    pool._shutdown_spares()
    monkeypatch.setenv("HTAM_SANDBOX_QUOTA_MB", "40")
    a = _evaluate(build_root, HERE / "cpp" / "p18_fill_shm_and_build_root.py")
    assert a["status"] == "crashed" and "scratch quota" in a["reason"], (a["status"], a["reason"])
    assert storable(a)  # the candidate's doing: replayed, not measured again
    assert list(Path(build_root).rglob(FILL_NAME)) == []
    monkeypatch.delenv("HTAM_SANDBOX_QUOTA_MB")
    _victim_matches_solo(build_root, solo)


# --------------------------------------------------------------------------------------------------------
# Units: no evaluation


def _chain(depth: int) -> int:
    """A `setsid` chain of `depth` links below this process (a subreaper), each sleeping; its head's pid."""
    code = ("import os, time\n"
            f"for _ in range({depth}):\n"
            "    if os.fork():\n"
            "        time.sleep(60); os._exit(0)\n"
            "    os.setsid()\n"
            "time.sleep(60)\n")
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True).pid


def test_subreaper_kills_a_chain_deeper_than_any_bounded_rounds():
    assert process_tree.become_subreaper()
    head = _chain(80)
    deadline = time.monotonic() + 20
    while len(process_tree.descendants()) < 81 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(process_tree.descendants()) >= 81
    killed = process_tree.kill_tree(head)
    assert killed >= 81 and process_tree.descendants() == {}


@pytest.mark.skipif(os.geteuid() != 0, reason="a uid of its own needs root")
def test_every_process_of_a_sandbox_uid_is_killed():
    ident = sandbox_uid.sandbox_user()
    if not isinstance(ident, sandbox_uid.Identity):
        pytest.skip(f"no sandbox uid here: {ident}")
    try:
        cmd = sandbox_uid.launch_command(ident, [sys.executable, "-S", "-c",
                                                 "import os, time\nfor _ in range(20):\n"
                                                 "    if os.fork() == 0: os.setsid()\n    else: break\n"
                                                 "time.sleep(60)"])
        subprocess.Popen(cmd, start_new_session=True)
        deadline = time.monotonic() + 20
        while len(sandbox_uid.processes_of(ident.uid)) < 21 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(sandbox_uid.processes_of(ident.uid)) >= 21
        assert sandbox_uid.kill_uid(ident.uid) == []
        assert sandbox_uid.processes_of(ident.uid) == []
    finally:
        process_tree.kill_tree(None)
        ident.release()


def test_quota_watchdog_calls_once_over_the_limit(tmp_path):
    calls: list[str] = []
    q = scratch_quota.Quota(1 << 20, calls.append, interval_s=0.05)
    q.watch(str(tmp_path))
    (tmp_path / "small").write_bytes(b"x" * 1000)
    time.sleep(0.3)
    assert calls == []
    (tmp_path / "big").write_bytes(os.urandom(2 << 20))
    deadline = time.monotonic() + 5
    while not calls and time.monotonic() < deadline:
        time.sleep(0.05)
    q.stop()
    assert len(calls) == 1 and "scratch quota" in calls[0] and q.over == calls[0]


def test_spares_leave_no_job_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    pool._shutdown_spares()
    pool._replenish(1)
    assert len(list(tmp_path.glob("htam-job-*"))) == 1
    pool._shutdown_spares()
    assert list(tmp_path.glob("htam-job-*")) == [] and list(tmp_path.glob("htam-sandbox-*")) == []
