"""Shared builds across the trust boundary: nothing a candidate writes is ever loaded by another candidate.

Each attacker of issue 25's classes 6-8 (`cpp/p19_pch_poison.py`, `p19_stale_build_lock.py`, `p19_so_swap.py`)
is evaluated, then the honest victim whose extension it attacks (its `_VICTIM_*` constants, evaluated as a
candidate here). The victim must get the verdict it gets alone (accepted), load only the checker's build of
its own arguments, and no timeout or evaluator error may be stored. Real checker and sandbox processes, real
builds: the catalogue's extension (shared with the other cheat tests) and two small victim extensions.

The lock and builder units at the end are fast and compile nothing.
"""

from __future__ import annotations

import ast
import json
import os
import re
import time
from pathlib import Path

import pytest
from cheat_catalogue import HERE, NOT_ACCEPTED, task_path
from sync_extension import source_of

from htam_agent.evaluation.common import builder
from htam_agent.evaluation.common.containment import landlock
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator, storable
from htam_agent.evaluation.parent.options import EvalOptions
from htam_agent.evaluation.parent.store import VerdictStore

TIMING_PLAN = {"target_s": 0.05, "min_reps": 3, "max_reps": 10}
# The lock attack runs first: in a fresh session its victim's extension is built after the lock was tried.
ATTACKERS = ("p19_stale_build_lock", "p19_so_swap", "p19_pch_poison")

VICTIM = '''"""Honest victim of the shared-build attacks (tests/cheats/test_boundary_builds.py)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = {cpp!r}

_ext = load_inline(name={name!r}, cpp_sources=_CPP, functions={functions!r}, extra_cflags={cflags!r},
                   extra_ldflags={ldflags!r})


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.leaky(x.contiguous(), self.negative_slope)
'''


def victim_of(attacker: Path, name: str | None = None) -> str:
    """The honest candidate whose extension the attacker targets (from its `_VICTIM_*` constants)."""
    consts = {}
    for node in ast.parse(attacker.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("_VICTIM_NAME", "_VICTIM_CPP"):
                consts[node.targets[0].id] = ast.literal_eval(node.value)
            elif node.targets[0].id == "_VICTIM_ARGS":
                consts["args"] = {ast.literal_eval(k): ast.literal_eval(v)
                                  for k, v in zip(node.value.keys, node.value.values, strict=True)
                                  if not isinstance(v, ast.Name)}
    args = consts["args"]
    return VICTIM.format(cpp=consts["_VICTIM_CPP"], name=name or consts["_VICTIM_NAME"], functions=args["functions"],
                         cflags=args["extra_cflags"], ldflags=args["extra_ldflags"])


def attack_report(verdict: dict) -> dict:
    found = re.findall(r"P19_BUILD_ATTACK (\{.*\})", verdict.get("sandbox_stderr_tail", ""))
    assert found, f"the attacker's report is missing: {verdict.get('sandbox_stderr_tail', '')[-500:]}"
    return json.loads(found[-1])


def every_entry_verifies(shared: Path) -> list[str]:
    """Files of the shared cache whose hash no longer matches the manifest that the checker wrote."""
    bad = []
    for manifest in [*shared.glob("ext/*/manifest.json"), *shared.glob("pch/*/manifest.json")]:
        files = json.loads(manifest.read_text())["files"]
        bad += [f"{manifest.parent.name}/{rel}" for rel, digest in files.items()
                if builder.sha256_file(manifest.parent / rel) != digest]
    for folder in [*shared.glob("ext/*"), *shared.glob("pch/*")]:
        if not (folder / "manifest.json").is_file():
            bad.append(f"{folder.name}: a folder without the checker's manifest")
    return bad


@pytest.mark.slow
@pytest.mark.parametrize("attacker", ATTACKERS)
def test_victim_after_build_attacker(attacker, build_root, tmp_path):
    store = VerdictStore(str(tmp_path / "verdicts"))
    opts = EvalOptions(backend="cpp", baselines=(), timing=True, timing_plan=TIMING_PLAN, build_root=build_root)
    ev = Evaluator(opts, store)
    task = str(task_path("elementwise_leaky_relu"))
    path = HERE / "cpp" / f"{attacker}.py"
    a = ev.evaluate(Candidate(task_path=task, source=source_of(path)), use_store=False)
    assert a["status"] in NOT_ACCEPTED, (a["status"], a["reason"])
    report = attack_report(a)
    shared = Path(build_root) / "shared"
    if landlock.landlock_abi() >= 1:
        assert report["planted"] == [] and report["refused"] > 0, report
        assert every_entry_verifies(shared) == []
    # The PCH attacker's victim has an extension of its own, built after the attack with the PCH it targeted.
    victim_src = victim_of(path, "htam_victim_pch" if attacker == "p19_pch_poison" else None)
    v = ev.evaluate(Candidate(task_path=task, source=victim_src), use_store=False)
    assert v["accepted"], (v["status"], v["reason"], v.get("compiler_message", "")[-800:])
    (fact,) = [b for b in v["builds"] if b["name"].startswith("htam_victim")]
    assert fact["cache"] in ("hit", "built") and not fact.get("environment"), fact
    if "key" in report:
        assert report["key"] == fact["key"], "the attacker aimed at another build than the victim's"
    entry = next(shared.glob(f"ext/{fact['key']}*"))
    manifest = json.loads((entry / "manifest.json").read_text())
    so = f"build/{manifest['module']}.so"
    assert fact["sha256"] == manifest["files"][so] == builder.sha256_file(entry / so)  # the checker's build
    assert not list(shared.glob("pch/poisoned")) and not list(shared.glob("ext/*.gone"))
    for stored in (tmp_path / "verdicts").rglob("*.json"):
        assert json.loads(stored.read_text()).get("status") not in ("timeout", "error"), stored


# --------------------------------------------------------------------------------------------------------
# Units: locks with owners, what is shared, what is stored


def test_lock_of_a_dead_owner_is_broken(tmp_path):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)  # a pid that was alive and is not any more
    lock = tmp_path / "locks" / "ext-k.lock"
    lock.parent.mkdir()
    lock.write_text(json.dumps({"pid": pid, "start": "1", "host": os.uname().nodename, "since": time.time()}))
    held = builder.OwnedLock(lock)
    assert held.acquire(time.monotonic() + 5)
    assert held.broken and "dead" in held.broken[0]
    assert json.loads(lock.read_text())["pid"] == os.getpid()
    held.release()
    assert not lock.exists()


def test_lock_of_a_live_owner_waits_then_breaks_when_too_old(tmp_path):
    lock = tmp_path / "ext-k.lock"
    first = builder.OwnedLock(lock)
    assert first.acquire(time.monotonic() + 1)
    t0 = time.monotonic()
    assert not builder.OwnedLock(lock).acquire(time.monotonic() + 0.5)  # a live owner within its limit
    assert time.monotonic() - t0 >= 0.4
    os.utime(lock, (time.time() - 1000, time.time() - 1000))
    late = builder.OwnedLock(lock, limit_s=900)
    assert late.acquire(time.monotonic() + 1) and "older" in late.broken[0]


def test_lock_claiming_a_future_time_is_broken(tmp_path):
    lock = tmp_path / "ext-k.lock"
    lock.write_text(json.dumps({"pid": 1, "start": builder._start_time(1), "host": os.uname().nodename,
                                "since": time.time() + 1e6}))
    held = builder.OwnedLock(lock)
    assert held.acquire(time.monotonic() + 1) and held.broken


def test_what_a_shared_build_accepts():
    ok = builder.normalize("ext", {"cpp_sources": "int f();", "functions": ["f"],
                                   "extra_cflags": ["-O3", "-fopenmp", "-march=native", "-DN=4", "-std=c++17"],
                                   "extra_ldflags": ["-fopenmp", "-lm", "", "-L/usr/lib"],
                                   "extra_cuda_cflags": ["-O3", "--use_fast_math", "-arch=sm_90", "-Xptxas=-v"]})
    assert ok["cpp_sources"] == ["int f();"] and ok["cuda_sources"] == []
    for bad in ({"extra_cflags": ["-fplugin=/tmp/x.so"]}, {"extra_cflags": ["-specs=/tmp/s"]},
                {"extra_cflags": ["-B/tmp"]}, {"extra_ldflags": ["-Wl,--plugin=/tmp/p.so"]},
                {"extra_cflags": ["-O3\nrule x"]}, {"extra_cflags": ["@/tmp/flags"]},
                {"extra_include_paths": ["/tmp/htam-sandbox-x/inc"]}, {"extra_include_paths": ["rel/inc"]},
                {"extra_ldflags": ["-L/tmp/htam-sandbox-x"]},
                {"sycl_sources": "x"}, {"cpp_sources": ["x", 3]}):
        with pytest.raises(builder.NotShared):
            builder.normalize("ext", {"cpp_sources": "", **bad})
    with pytest.raises(builder.NotShared):
        builder.normalize("../evil", {"cpp_sources": ""})


def test_the_key_covers_every_input():
    base = {"cpp_sources": "int f();", "functions": ["f"], "extra_cflags": ["-O3"]}
    key = builder.key_of(builder.normalize("ext", base))
    for change in ({"cpp_sources": "int f(); "}, {"functions": ["f", "g"]}, {"extra_cflags": ["-O2"]},
                   {"extra_ldflags": ["-lm"]}, {"with_pytorch_error_handling": False}):
        assert builder.key_of(builder.normalize("ext", {**base, **change})) != key, change
    assert builder.key_of(builder.normalize("ext2", base)) != key
    assert builder.key_of(builder.normalize("ext", dict(base))) == key


def test_verdicts_the_candidate_may_not_have_caused_are_not_stored():
    assert not storable({"status": "timeout", "flags": []})
    assert not storable({"status": "error", "flags": []})
    assert not storable({"status": "compile_error", "flags": [],
                         "compiler_message": "fatal error: error writing to /tmp/cc.s: No space left on device"})
    assert not storable({"status": "incorrect", "flags": [], "builds": [{"cache": "failed", "environment": True}]})
    assert storable({"status": "compile_error", "flags": [], "compiler_message": "error: 'x' was not declared"})
    assert storable({"status": "accepted", "flags": [], "builds": [{"cache": "hit", "seconds": 0.01}]})
