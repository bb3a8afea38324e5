"""What a person reads about a run, from a recorded run folder (a real 3-step cpp run of norm_rmsnorm by the
offline exemplar coder, 2026-12-05: run.json, events.jsonl, each candidate's generation.json, reply.md,
code.py and verdict.json; the checkpoints and plots left out): the direction shown is the one recorded, with
the one asked for and the coder's reason beside it; a candidate that re-submits earlier code says so;
/export writes the path it is given and says where it wrote; no answer is raw JSON unless asked for.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from htam_agent.chat.agent import COMMANDS, ChatSession, help_text
from htam_agent.chat.prose import show_text
from htam_agent.chat.runs import RunManager, task_name_for
from htam_agent.chat.runview import RunView, list_runs
from htam_agent.context import RunContext
from htam_agent.run.report import switch_notes

DATA = Path(__file__).parent / "data" / "recorded_run.tar.gz"
RUN = "20261205-202442-norm_rmsnorm-8c937f"


@pytest.fixture
def runs(chat_env: Path) -> Path:
    root = chat_env / "runs"
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(DATA) as tar:
        tar.extractall(root, filter="data")
    return root


def _session() -> ChatSession:
    return ChatSession(RunManager(RunContext.from_env(backend="cpp", coder="exemplar")))


def _reply(s: ChatSession, text: str) -> str:
    events = list(s.send(text))
    errors = [e.text for e in events if e.kind == "error"]
    assert not errors, errors
    return "\n".join(e.text for e in events if e.kind == "reply")


def test_the_direction_shown_is_the_one_recorded_with_the_one_asked_and_why(runs: Path) -> None:
    view = RunView(runs / RUN)
    s0, s1, s2 = view.steps
    # the run's own record: step 0 was asked parallel_mapping, the coder declared memory_access
    assert [e["direction"] for e in view.events if e.get("event") == "step_done"][0] == "memory_access"
    assert (s0.asked, s0.direction) == ("parallel_mapping", "memory_access")
    assert s0.direction_shown == "memory_access (asked parallel_mapping)"
    assert "parallel_mapping's moves give nothing new on cpp" in s0.explanation()
    assert "knobs" not in s0.explanation()  # the coder's words, not its knob dump
    # parallel_mapping's strategies are not listed under memory_access: the coder applied none of them
    assert s0.strategies == [] and s0.offered[0].startswith("pm_")
    assert (s1.asked, s1.direction) == ("parallel_mapping", "instruction_throughput")
    assert s2.asked == s2.direction == "instruction_throughput" and s2.explanation() == ""
    notes = switch_notes(runs / RUN)  # report.md says the same under its table
    assert len(notes) == 4 and "asked `parallel_mapping`; the coder declared and applied `memory_access`" in notes[2]


def test_a_candidate_that_repeats_earlier_code_says_so(runs: Path) -> None:
    # the offline coder with no variant left re-submits an earlier candidate: here step 0's code again at step 3
    src, dst = runs / RUN / "step_00" / "cand_0_r0", runs / RUN / "step_03" / "cand_0_r0"
    shutil.copytree(src, dst)
    view = RunView(runs / RUN)
    (last,) = [s for s in view.steps if s.step == 3]
    assert last.verdicts[0].startswith("#4 accepted") and last.verdicts[0].endswith("(same code as #1)")
    assert "re-submitted candidate 1's code" in last.explanation()
    assert not any(s.repeats for s in view.steps if s.step < 3)


def test_show_and_runs_answer_in_prose_and_json_only_when_asked(runs: Path) -> None:
    s = _session()
    shown = _reply(s, "/show")  # a new session: the newest run
    assert shown.startswith(f"Run {RUN}: norm_rmsnorm on cpp, finished.")
    assert "step 0: memory_access (asked parallel_mapping)" in shown and "the coder applied memory_access" in shown
    assert not shown.lstrip().startswith(("{", "["))
    listed = _reply(s, "/runs")
    assert "best 2.22x over eager" in listed and "{" not in listed
    raw = json.loads(_reply(s, "/runs --json"))
    assert raw[0]["run_id"] == RUN and raw[0]["best_speedup_vs_eager"] == pytest.approx(2.2221)
    assert show_text(RunView(runs / RUN), "finished") == shown


def test_export_path_writes_that_path_and_export_alone_says_where(runs: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    s = _session()
    dest = tmp_path / "out" / "exported_from_chat.py"
    said = _reply(s, f"/export {dest}")
    assert dest.read_text() == (runs / RUN / "best_kernel.py").read_text()
    assert f"to {dest}" in said and "candidate 2, 2.22x over eager" in said and "Warning" not in said
    monkeypatch.chdir(tmp_path)
    said = _reply(s, "/export")
    assert (tmp_path / "norm_rmsnorm_best_kernel.py").is_file()
    assert str(tmp_path / "norm_rmsnorm_best_kernel.py") in said.replace("\n", "") and "current folder" in said
    said = _reply(s, f"/export {RUN} {tmp_path / 'by_id.py'}")
    assert (tmp_path / "by_id.py").is_file() and RUN in said


def test_export_warns_when_the_best_kernel_is_slower_than_eager(runs: Path, tmp_path: Path) -> None:
    # the same run with only its last candidate (0.99x over eager) accepted and no best_kernel.py written
    for step in ("step_00", "step_01"):
        shutil.rmtree(runs / RUN / step)
    (runs / RUN / "best_kernel.py").unlink()
    said = _reply(_session(), f"/export {tmp_path / 'slow.py'}")
    assert (tmp_path / "slow.py").read_text() == (runs / RUN / "step_02" / "cand_0_r0" / "code.py").read_text()
    assert "Warning: this kernel runs 0.99x as fast as eager PyTorch" in said and "keep PyTorch" in said


def test_help_explains_every_command_including_quit() -> None:
    text = help_text()
    for cmd, (_args, what) in COMMANDS.items():
        assert f"\n{cmd}" in "\n" + text and what in text
    assert "/quit" in COMMANDS and "/exit" in text and "--json" in text and "Up and Down" in text
    assert all(len(what.split()) >= 2 for _a, what in COMMANDS.values())  # says what it does, not just syntax


def test_a_pasted_task_is_named_after_its_class_or_the_name_given(chat_env: Path) -> None:
    src = (Path(__file__).resolve().parents[2] / "htam_agent" / "bundled_tasks" / "suite" / "norm_rmsnorm.py"
           ).read_text()
    m = RunManager(RunContext.from_env(backend="cpp"))
    assert m.task_file(src, "My RMSNorm").name == "my_rms_norm.py"
    own = src.replace("class Model(nn.Module):", "class RMSNorm(nn.Module):") + "\n\nclass Model(RMSNorm):\n    pass\n"
    assert task_name_for(own) == "rms_norm"
    assert task_name_for(src).startswith("pasted_")  # nothing to name it after: say it was pasted
    with pytest.raises(ValueError, match="no letters or digits"):
        m.task_file(src, "!!!")
    assert list_runs(m.runs_dir) == []


def test_stopping_says_what_state_the_run_is_in(runs: Path) -> None:
    from htam_agent.chat.terminal import goodbye

    s = _session()
    page = goodbye(s, page=True)  # the page shows the newest run: a finished one is shown again, not resumed
    assert page.startswith("page stopped.") and "is finished" in page and f"htam ui --run {RUN}" in page
    assert "Resume" not in page
    assert goodbye(s) == "stopped."  # the terminal touched no run
    list(s.send("/show"))
    s.manager.current = RUN
    assert f"`/show {RUN}`" in goodbye(s)
    (runs / RUN / "result.json").unlink()  # as a run killed mid-step leaves it
    assert f"`/resume {RUN}` continues it" in goodbye(s) and "Resume continue it" in goodbye(s, page=True)


def test_the_live_lines_say_where_the_memory_comes_from_and_when_the_space_is_used_up() -> None:
    from htam_agent.chat.terminal import event_line

    line = event_line({"event": "memory", "line": "memory: 94 shipped transitions from the cuda verdict table"})
    assert line is not None and line.plain.startswith("memory: 94 shipped transitions")
    done = event_line({"event": "step_done", "step": 4, "best_speedup": 1.5, "stop": "space_exhausted"})
    assert done is not None and "measured every variant" in done.plain and "1.50x" in done.plain
    assert "measured every variant" not in event_line({"event": "step_done", "step": 1}).plain
