"""`htam optimize` on bad input: clear messages, the right exit status, nothing lost."""

from __future__ import annotations

import socket
from pathlib import Path

from typer.testing import CliRunner

from htam_agent.cli import app

from .scripted_coder import softmax_task

runner = CliRunner()


def test_missing_task_file(agent_env: Path) -> None:
    res = runner.invoke(app, ["optimize", "no/such/task.py", "--backend", "cpp"])
    assert res.exit_code == 2 and "no such task file" in res.output


def test_unknown_run_to_resume(agent_env: Path) -> None:
    res = runner.invoke(app, ["optimize", "--resume", "never-ran"])
    assert res.exit_code == 2 and "no such run" in res.output


def test_bad_setting_names_its_variable(agent_env: Path) -> None:
    res = runner.invoke(app, ["optimize", str(softmax_task()), "--backend", "fortran"])
    assert res.exit_code == 2 and "HTAM_BACKEND" in res.output


def test_unreachable_endpoint_is_a_clear_error_and_resumable(agent_env: Path, monkeypatch) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HTAM_LLM_RETRIES", "0")
    res = runner.invoke(app, ["optimize", str(softmax_task()), "--backend", "cpp", "--steps", "1",
                              "--model", "m", "--base-url", f"http://127.0.0.1:{port}/v1"])
    assert res.exit_code == 1, res.output
    out = " ".join(res.output.split())
    assert "HTAM_BASE_URL" in out and "--resume" in out
    runs = list((agent_env / "runs").iterdir())
    assert len(runs) == 1 and (runs[0] / "run.json").exists() and (runs[0] / "checkpoints.sqlite").exists()


def test_the_live_table_fits_80_columns_without_breaking_an_id():
    """The quick start's live table at 80 columns: no line wider, every direction id whole, a strategy id never
    wrapped over lines (a long one ends in an ellipsis; the step shows how many more it applied)."""
    import re

    from rich.console import Console

    from htam_agent.cli.optimize import ProgressView

    view = ProgressView("htam optimize norm_rmsnorm (cpp)")
    for ev in [{"event": "direction", "step": 0, "direction": "instruction_throughput"},
               {"event": "strategies", "step": 0,
                "strategies": ["fr_elementwise_chain_fusion", "ma_vectorized_loads", "it_multiple_accumulators"]},
               {"event": "verdict", "step": 0, "variant": 0, "repair": 0, "status": "accepted",
                "speedup_vs_eager": 1.93, "reason": "ok"},
               {"event": "verdict", "step": 0, "variant": 1, "repair": 0, "status": "compile_error", "reason": "x"},
               {"event": "step_done", "step": 0, "speedup_vs_eager": 1.93, "best_speedup": 1.93}]:
        view.on_event(ev)
    console = Console(width=80, record=True)
    console.print(view)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "instruction_throughput" in text and "compile_error" in text
    lines = text.splitlines()
    assert len([ln for ln in lines if "fr_elementwise" in ln]) == 1  # the id starts on one line...
    assert not [ln for ln in lines if re.search(r"(chain_fusion|_fusion|ion \+2)", ln)
                and "fr_elementwise" not in ln], text  # ...and no piece of it continues on another
    wide = Console(width=160, record=True)
    wide.print(view)
    assert "fr_elementwise_chain_fusion +2" in wide.export_text()
