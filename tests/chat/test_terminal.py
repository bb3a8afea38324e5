"""`htam chat` in a real pseudo-terminal at 80 columns, over the recorded run (test_display.py): no line is
wider than the terminal, no word is broken across lines, no rich markup shows as text, /export PATH writes
PATH, /help explains every command, Up recalls the last line; and the same session at 200 columns prints the
same words (so the narrow one broke none)."""

from __future__ import annotations

import re
import sys
import tarfile
from pathlib import Path

import pytest

from htam_agent.chat.agent import COMMANDS

from .pty_chat import PtyChat
from .test_display import DATA, RUN

MARKUP = re.compile(r"\[/?(dim|bold|red|green|yellow|magenta|cyan)[^\]]*\]|\[/\]")
SCRIPT = ["/help", "/runs", "/show", "/explain 3", "/export out/kernel.py", "/export", "/memory transitions"]


@pytest.fixture
def runs(chat_env: Path) -> Path:
    root = chat_env / "runs"
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(DATA) as tar:
        tar.extractall(root, filter="data")
    return root


def _session(cwd: Path, columns: int) -> tuple[str, list[str]]:
    chat = PtyChat(["--backend", "cpp"], cwd, columns=columns)
    try:
        chat.read_until("you> ", 120)
        answers = [chat.say(line) for line in SCRIPT]
        chat.type("\x1b[A\r")  # Up, Enter: the last line again (readline's history)
        chat.read_until("you> ", 120)
        answers.append(plain_after(chat, answers))
    finally:
        text = chat.close()
    return text, answers


def plain_after(chat: PtyChat, answers: list[str]) -> str:
    from .pty_chat import plain

    text = plain(chat.raw)
    return text[text.rindex("you> /memory transitions"):]


def _words(text: str) -> set[str]:
    """Whole words of prose: letters (an apostrophe inside), without paths and identifiers, which may break
    after a `/` or `_` when longer than a line."""
    return {w for w in re.findall(r"(?<![\w/.-])[A-Za-z][a-z']+(?![\w/.-])", text)}


def test_the_terminal_at_80_columns(runs: Path, tmp_path: Path) -> None:
    narrow, answers = _session(tmp_path, 80)
    lines = narrow.splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    assert not MARKUP.search(narrow), MARKUP.search(narrow)
    assert "^[[A" not in narrow and "\x1b" not in narrow
    # /export PATH writes PATH; /export alone writes into the current folder and says where
    assert (tmp_path / "out" / "kernel.py").read_text() == (runs / RUN / "best_kernel.py").read_text()
    assert (tmp_path / "norm_rmsnorm_best_kernel.py").is_file()
    assert "current folder" in answers[5]
    # /help explains every command, each explanation wrapped under its command
    help_out = " ".join(answers[0].split())
    for cmd, (_args, what) in COMMANDS.items():
        assert cmd in help_out and " ".join(what.split()) in help_out, cmd
    # the direction recorded, the one asked for and why
    assert "memory_access (asked parallel_mapping)" in " ".join(answers[2].split())
    # Up recalled /memory transitions and ran it again
    assert answers[-1].count("Transitions") >= 1 and narrow.count("you> /memory transitions") == 2

    wide, _ = _session(tmp_path, 200)
    assert max(len(line) for line in wide.splitlines()) > 80  # the wide terminal was used
    broken = _words(wide) - _words(narrow)
    assert not broken, f"words broken across lines at 80 columns: {sorted(broken)[:20]}"


REPLY = ("Candidate 3 was accepted but gives back most of the gain: it runs at 0.99 times the speed of eager "
         "PyTorch because compiling for the native architecture changed the vectorization of the reduction, and "
         "the roofline fraction fell from fifty-seven to fourteen percent. Keep candidate 2, export it with "
         "/export, and give torch.compile a try where it is an option: it is faster than every kernel here.")


@pytest.mark.slow  # about 12 s on the 2-core VM: the chat model's client loads in the child
def test_a_streamed_reply_and_a_tool_result_at_80_columns(runs: Path, tmp_path: Path, openai_server) -> None:
    from .scripted import call

    openai_server.push(call("explain_verdict", run_id=RUN, candidate=3), REPLY)
    chat = PtyChat(["--backend", "cpp", "--model", "scripted-model", "--base-url", openai_server.url], tmp_path)
    try:
        chat.read_until("you> ", 120)
        out = chat.say("why is candidate 3 slower?")
    finally:
        chat.close()
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    assert not MARKUP.search(out), MARKUP.search(out)
    assert "explain_verdict -> candidate 3 (step 2, variant 0, repair 0) was accepted" in " ".join(out.split())
    reply = out[out.index("htam> "):]
    tokens = reply.split()
    for word in REPLY.split():  # the reply's 16-character chunks arrived mid-word; every word is whole
        assert word in tokens, (word, reply)
    assert openai_server.remaining == 0


@pytest.mark.slow  # a real run: a C++ build, verification and timing
@pytest.mark.timeout(1200)
def test_optimize_in_the_terminal_is_never_silent(chat_env: Path, tmp_path: Path) -> None:
    from htam_agent.bundled_tasks import SUITE_DIR

    from .pty_chat import plain

    (tmp_path / "rms.py").write_text((SUITE_DIR / "norm_rmsnorm.py").read_text())  # a short line to type
    script = Path(__file__).parent / "chat_in_subprocess.py"  # the terminal chat with the tests' run settings
    chat = PtyChat([], tmp_path, command=[sys.executable, str(script), "--interactive", "1"])
    try:
        chat.read_until("you> ", 120)
        out = chat.say("/optimize rms.py steps=1", timeout=900)
    finally:
        chat.close()
    raw = plain(chat.raw)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    assert not MARKUP.search(out), MARKUP.search(out)
    assert "step 0: direction" in out and "step 0 done" in out and "Steps:" in out, out
    assert "{" not in out  # prose, not JSON
    # the spinner's clock ran while the candidate was verified and timed (seconds counted, not frozen)
    seconds = {int(s) for s in re.findall(r"verifying and timing variant 0: (\d+) s", raw)}
    assert len(seconds) >= 2, sorted(seconds)
