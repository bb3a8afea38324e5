"""The README's test command is what CI runs, and its system-package step installs what is missing.

CI (`.ci/run`) must run the README's command exactly, so that a newcomer's first command is the one that is
known to pass; the install step is checked against a stand-in apt-get on a PATH that lacks the packages.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "system_packages.sh"


def _readme_test_command() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"Run the test suite[^\n]*\n\n```bash\n(.+?)\n```", text)
    assert match, "README.md: no ```bash block after 'Run the test suite'; .ci/run must run that command"
    return match.group(1).strip()


def test_ci_runs_the_readme_command_exactly():
    command = _readme_test_command()
    assert "tests/system_packages.sh" in command and command.endswith("python -m pytest")
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert command in lines, f".ci/run does not run the README's test command as written: {command!r}"


def _fake_path(tmp_path: Path, with_apt: bool) -> str:
    """A PATH with a shell and coreutils but no compiler and no chromium (and a recording apt-get, if asked)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "id", "env", "echo"):
        found = shutil.which(tool)
        assert found, f"{tool} is needed to run tests/system_packages.sh"
        (bin_dir / tool).symlink_to(found)
    if with_apt:
        apt = bin_dir / "apt-get"
        apt.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "apt.log"}\n')
        apt.chmod(0o755)
    return str(bin_dir)


def test_system_packages_installs_what_is_missing(tmp_path):
    if os.geteuid() != 0:
        import pytest

        pytest.skip("the install branch runs apt-get directly only as root (else through sudo)")
    path = _fake_path(tmp_path, with_apt=True)
    done = subprocess.run(["sh", str(SCRIPT)], env={"PATH": path}, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "apt.log").read_text().splitlines()
    assert calls[0].startswith("update") and calls[1].split()[-2:] == ["g++", "chromium"], calls


def test_system_packages_says_what_is_missing_without_apt(tmp_path):
    path = _fake_path(tmp_path, with_apt=False)
    done = subprocess.run(["sh", str(SCRIPT)], env={"PATH": path}, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "missing g++ chromium" in done.stderr, done.stderr
