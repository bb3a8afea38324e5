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
