"""One verdict, one writer: the checker's `VerdictBuilder` seals the verdict at its one `finalize`, and the
parent (evaluator, gateway, store) never writes into a verdict it was handed; what only it knows travels in the
envelope beside it. Also: `Candidate.of`, the one factory, names what is wrong with its arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from htam_agent.evaluation.common.verdict import (
    ENVELOPE_KEYS,
    FACT_KEYS,
    VerdictBuilder,
    VerdictSealed,
    with_envelope,
)
from htam_agent.evaluation.parent import evaluator
from htam_agent.evaluation.parent.candidate import Candidate, CandidateError
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.gateway import EvaluationGateway
from htam_agent.evaluation.parent.options import EvalOptions
from htam_agent.evaluation.parent.store import VerdictStore

TASK_SOURCE = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
CODE = "class ModelNew: pass\n"

# Every write the builder offers, with arguments it accepts before finalize.
WRITES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "add_flag": (("input_mutation", "why"), {}),
    "set_status": (("incorrect",), {}),
    "set_reason": (("a reason",), {}),
    "set_correct": ((False,), {}),
    "fail_check": (("values",), {}),
    "reject": (("timer_tampering", "why"), {}),
    "set_error": (("text",), {}),
    "set_compile": ((), {"compiled": True, "seconds": 1.0, "message": "ok"}),
    "add_trial": (({"trial": "t", "passed": True},), {}),
    "tag_trials": ((0, {"size": "alt"}), {}),
    "set_timing": (("candidate", {"median_ms": 1.0}),),
    "time_phase": (("verify", 0.5), {}),
    "warn": (("a warning",), {}),
    "record": ((), {"tier": "default"}),
    "attach_baseline": (({"status": "accepted", "timing": {"eager": {"median_ms": 2.0}}},), {}),
    "identify": (({"key": "k", "kind": "baseline"},), {}),
    "finalize": ((), {}),
    "finalize_job": (({},), {}),
}


def _accepted(candidate_ms: float = 1.0) -> VerdictBuilder:
    v = VerdictBuilder("relu", "cpp")
    v.set_compile(compiled=True, seconds=0.1)
    v.set_correct(True)
    v.set_status("accepted")
    v.set_timing("candidate", {"median_ms": candidate_ms})
    return v


@pytest.mark.parametrize("method", sorted(WRITES))
def test_a_finalized_verdict_refuses_every_write(method):
    v = _accepted()
    args = WRITES[method]
    getattr(v, method)(*args[0], **(args[1] if len(args) > 1 else {}))  # accepted before
    if not v.sealed:
        v.finalize()
    with pytest.raises(VerdictSealed, match="after finalize"):
        getattr(v, method)(*args[0], **(args[1] if len(args) > 1 else {}))


def test_every_public_write_is_covered_by_the_sealing_test():
    public = {n for n in vars(VerdictBuilder) if not n.startswith("_") and callable(getattr(VerdictBuilder, n))}
    reads = {"get", "has_flag", "timing", "trial_count"}
    assert public - reads == set(WRITES), "a new builder method must be listed in WRITES (and refuse after finalize)"


def test_the_sealed_dict_is_detached_from_the_builder():
    v = _accepted()
    builds: list[dict[str, Any]] = []
    v.record(builds=builds)
    out = v.finalize()
    builds.append({"name": "late"})  # a build service filling its list after the verdict went out
    assert out["builds"] == [] and json.loads(json.dumps(out)) == out


def test_unknown_keys_statuses_and_envelope_keys_are_refused_by_name():
    v = VerdictBuilder("relu", "cpp")
    with pytest.raises(KeyError, match="FACT_KEYS"):
        v.record(speedup_vs_eager=9.0)  # has its own method: written from the baseline only
    with pytest.raises(KeyError, match="FACT_KEYS"):
        v.record(wall_seconds=1.0)  # the parent's envelope, never the builder's
    with pytest.raises(ValueError, match="expected one of"):
        v.set_status("great")
    with pytest.raises(ValueError, match="identity.kind"):
        v.identify({"key": "k", "kind": "other"})
    with pytest.raises(KeyError, match="ENVELOPE_KEYS"):
        with_envelope(v.finalize(), status="accepted")
    assert not ENVELOPE_KEYS & FACT_KEYS


def test_the_baseline_gives_speedups_and_the_reason_in_one_finalize():
    v = _accepted(candidate_ms=2.0)
    v.attach_baseline({"status": "accepted", "reason": "baseline timings",
                       "timing": {"eager": {"median_ms": 3.0}, "compile": {"median_ms": 1.0}},
                       "flags": [{"name": "timing_unreliable", "rejects": False, "reason": "eager spread 30%"}]})
    out = v.finalize()
    assert out["speedup_vs_eager"] == 1.5 and out["speedup_vs_compile"] == 0.5
    assert out["reason"].startswith("accepted: correct on all trials, 1.50x vs eager (2.000 ms vs 3.000 ms)")
    assert [f["name"] for f in out["flags"]] == ["timing_unreliable"] and out["accepted"]
    failed = _accepted()
    failed.attach_baseline({"status": "error", "reason": "reference did not load", "timing": {}})
    assert failed.finalize()["warnings"] == ["baseline timing failed: reference did not load"]


def test_a_flag_raised_after_the_phases_gets_its_own_reason():
    """Processes outliving the sandbox are seen after the phases; the one finalize still writes the reason
    from them (a second finalize used to keep the earlier 'accepted: ...' line on a rejected verdict)."""
    v = _accepted()
    v.add_flag("processes_outlived", "1 process(es) the candidate started were still alive")
    out = v.finalize_job({})
    assert out["status"] == "rejected" and not out["accepted"]
    assert out["reason"].startswith("rejected (processes_outlived)")


def test_the_identity_names_the_sources_judged():
    v = _accepted()
    job = {"identity": {"key": "abc", "kind": "candidate", "device_name": "dev"}, "candidate_source": CODE,
           "task_source": TASK_SOURCE}
    out = v.finalize_job(job)
    assert (out["key"], out["kind"], out["device_name"]) == ("abc", "candidate", "dev")
    assert out["candidate_sha256"] == runner_sha(CODE) and out["task_sha256"] == runner_sha(TASK_SOURCE)


def runner_sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


# -- the parent never writes into a verdict --------------------------------------------------------------


def _refuse(*_: Any, **__: Any) -> None:
    raise AssertionError("the parent wrote into a finalized verdict")


class _FrozenDict(dict):
    __setitem__ = __delitem__ = setdefault = update = pop = popitem = clear = __ior__ = _refuse  # type: ignore[assignment]


class _FrozenList(list):
    __setitem__ = __delitem__ = __iadd__ = append = extend = insert = remove = pop = clear = sort = reverse = _refuse  # type: ignore[assignment]


def _frozen(x: Any) -> Any:
    if isinstance(x, dict):
        return _FrozenDict({k: _frozen(v) for k, v in x.items()})
    if isinstance(x, list):
        return _FrozenList(_frozen(i) for i in x)
    return x


def _fake_checker(jobs: list[dict[str, Any]]):
    """A checker without a process: builds the verdict as the real one does and hands it over frozen."""
    def run_job(job: dict[str, Any], options: EvalOptions) -> dict[str, Any]:
        job = json.loads(json.dumps(job))  # the job reaches a checker as JSON
        jobs.append(job)
        v = VerdictBuilder(job["task_name"], job["backend"])
        v.set_compile(compiled=True, seconds=0.1)
        v.set_correct(True)
        v.set_status("accepted", "baseline timings" if job["mode"] == "baseline" else "")
        if job["mode"] == "baseline":
            v.set_timing("eager", {"median_ms": 4.0})
        elif job["mode"] == "evaluate":
            v.set_timing("candidate", {"median_ms": 2.0})
        return _frozen(with_envelope(v.finalize_job(job), wall_seconds=1.0, checker_stderr_tail=""))
    return run_job


def test_the_parent_never_writes_into_a_verdict(tmp_path, monkeypatch):
    jobs: list[dict[str, Any]] = []
    monkeypatch.setattr(evaluator, "run_job", _fake_checker(jobs))
    task = tmp_path / "relu.py"
    task.write_text(TASK_SOURCE)
    store = VerdictStore(tmp_path / "verdicts")
    ev = Evaluator(EvalOptions(backend="cuda", baselines=("eager",)), store=store, device="dev")
    cand = Candidate.of(task, CODE)
    v = ev.evaluate(cand)
    assert [j["mode"] for j in jobs] == ["baseline", "evaluate"]
    assert jobs[1]["identity"] == {"key": ev.key(cand), "kind": "candidate", "device_name": "dev"}
    assert jobs[1]["baseline"]["timing"] == {"eager": {"median_ms": 4.0}}
    assert v["speedup_vs_eager"] == 2.0 and v["key"] == ev.key(cand) and v["kind"] == "candidate"
    assert v["reason"].startswith("accepted: correct on all trials, 2.00x vs eager")
    assert store.get(ev.key(cand))["speedup_vs_eager"] == 2.0
    assert ev.evaluate(cand)["cached"] is True  # replayed from the store: the envelope says so
    gateway = EvaluationGateway(ev, "local")
    gateway.benchmark(cand)
    gateway.verify(Candidate.of(task, CODE + "# another\n"))
    gateway.compile(cand)
    assert EvaluationGateway(ev, "replay").benchmark(cand)["cached"] is True
    assert ev.baseline(cand, fresh=True)["kind"] == "baseline"


# -- Candidate.of ----------------------------------------------------------------------------------------


def test_candidate_factory_reads_files_and_names_what_is_wrong(tmp_path):
    task = tmp_path / "relu.py"
    task.write_text(TASK_SOURCE)
    code = tmp_path / "cand.py"
    code.write_text(CODE)
    c = Candidate.of(task, source_path=code)
    assert (c.source, c.task_source, c.name, c.origin) == (CODE, TASK_SOURCE, "relu", str(code))
    assert Candidate.of(str(task), CODE, name="n", task_source="pinned").task_source == "pinned"
    with pytest.raises(CandidateError, match=r"task file '.*missing.py': no such file; pass the path"):
        Candidate.of(tmp_path / "missing.py", CODE)
    with pytest.raises(CandidateError, match=r"candidate file '.*nope.py': no such file"):
        Candidate.of(task, source_path=tmp_path / "nope.py")
    with pytest.raises(CandidateError, match="not both"):
        Candidate.of(task, CODE, source_path=code)
    with pytest.raises(CandidateError, match="source is a NoneType"):
        Candidate(task_path=str(task), source=None)  # type: ignore[arg-type]
    assert isinstance(CandidateError("x"), ValueError)
    assert Path(c.task_path).is_absolute()
