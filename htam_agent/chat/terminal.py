"""`htam chat`: the chat in a terminal (rich): the reply's tokens as they stream, a line per run event (step,
direction, strategies, verdict) and a spinner whose clock keeps running while a step takes long.

Everything printed is wrapped to the terminal's width at spaces (a path too long for a line breaks after a
`/`), with list items indented under themselves, so an 80-column terminal breaks no word. Input has line
editing and a history kept between sessions (GNU readline, in Python's standard library). Paste code
between two lines of three backticks. `-m TEXT` sends messages without a prompt (scripts, tests).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from .agent import ChatEvent, ChatSession
from .prose import tool_summary
from .runview import shorten

STYLE = {"accepted": "green", "incorrect": "red", "compile_error": "red", "rejected": "magenta"}
_BREAKS = re.compile(r"(?<=[/_.,-])")  # where an over-long token (a path) may break


def _spans(plain: str, width: int) -> list[tuple[int, int]]:
    """(start, end) of each token, over-long ones cut after a `/`, `_`, `.` or `-` (else hard) to fit width."""
    out = []
    for m in re.finditer(r"\S+", plain):
        start, end = m.span()
        while end - start > width:
            cuts = [start + c.start() for c in _BREAKS.finditer(plain[start:end]) if 0 < c.start() <= width]
            cut = cuts[-1] if cuts else start + width
            out.append((start, cut))
            start = cut
        out.append((start, end))
    return out


def wrap(text: Text | str, width: int, indent: int = 0, hang: int | None = None) -> list[Text]:
    """Lines of at most `width` columns, broken between words; continuation lines indented by `hang`
    (default: under the line's first word, after a list item's "- " or a "step N: " lead-in)."""
    text = Text(text) if isinstance(text, str) else text
    plain = text.plain
    lead = len(plain) - len(plain.lstrip(" "))
    if hang is None:  # under the text of an indented line, two further in for a line's lead-in ("step 0: ...")
        hang = lead if lead >= 4 else lead + 2
    first_width = max(20, width - indent)
    rest_width = max(20, width - indent - hang)
    lines: list[Text] = []
    cur: list[tuple[int, int]] = []
    avail = first_width - lead
    for a, b in _spans(plain, rest_width):
        used = (cur[-1][1] - cur[0][0]) if cur else 0
        if cur and used + (a - cur[-1][1]) + (b - a) > avail:
            lines.append(text[cur[0][0]:cur[-1][1]])
            cur, avail = [], rest_width
        if cur and a == cur[-1][1]:  # the continuation of a cut token
            cur.append((a, b))
        else:
            cur.append((a, b))
    if cur:
        lines.append(text[cur[0][0]:cur[-1][1]])
    out = []
    for i, line in enumerate(lines or [Text("")]):
        pad = " " * (indent + (lead if i == 0 else hang))
        out.append(Text(pad) + line)
    return out


class StreamWrap:
    """Streamed tokens written word by word, a word that would cross the right edge starting a new line."""

    def __init__(self, console: Console, prefix: str = "htam> ") -> None:
        self.console = console
        self.width = console.width
        self.col = 0
        self.word = ""
        self.prefix = prefix
        self.started = False

    def _out(self, s: str) -> None:
        self.console.file.write(s)

    def write(self, chunk: str) -> None:
        if not self.started:
            self.console.print(Text(self.prefix, style="bold cyan"), end="")
            self.col = len(self.prefix)
            self.started = True
        for ch in chunk:
            if ch == "\n":
                self._word()
                self._out("\n")
                self.col = 0
            elif ch in " \t":
                self._word()
                if 0 < self.col < self.width:
                    self._out(" ")
                    self.col += 1
            else:
                self.word += ch
                if len(self.word) >= self.width - 2:  # a token longer than a line: hard-cut
                    self._word()
        self.console.file.flush()

    def _word(self) -> None:
        if not self.word:
            return
        if self.col + len(self.word) > self.width:
            self._out("\n")
            self.col = 0
        self._out(self.word)
        self.col += len(self.word)
        self.word = ""

    def end(self) -> None:
        if self.started:
            self._word()
            self._out("\n")
            self.console.file.flush()
        self.started = False
        self.col = 0


def event_line(ev: dict[str, Any]) -> Text | None:
    """One line of progress for a run event (None: not worth a line)."""
    kind, step = ev.get("event"), ev.get("step")
    if kind == "analyze":
        return Text(f"step {step}: {ev.get('op_class')} operator, {ev.get('bottleneck')}-bound")
    if kind == "direction":
        return Text.assemble(f"step {step}: direction ", (str(ev.get("direction")), "bold"),
                             f" ({shorten(str(ev.get('reason', '')), 110)})")
    if kind == "strategies":
        return Text(f"step {step}: strategies {', '.join(ev.get('strategies') or []) or '-'}")
    if kind == "generated":
        parts = []
        if ev.get("asked"):
            why = ev.get("why") or "its own declared move"
            parts.append(f"step {step}: asked {ev['asked']}; the coder applied {ev.get('direction')} ({why})")
        if ev.get("same_as"):
            parts.append(f"step {step}: variant {ev.get('variant')} is candidate {ev['same_as']}'s code again "
                         "(the coder had no new variant): its verdict is a second timing of that kernel")
        return Text("\n".join(parts), style="yellow") if parts else None
    if kind == "verdict":
        s = ev.get("speedup_vs_eager")
        status = str(ev.get("status"))
        line = Text.assemble(f"step {step}: variant {ev.get('variant')} (repair {ev.get('repair')}) ",
                             (status, STYLE.get(status, "yellow")))
        if s:
            line.append(f" {s:.2f}x over eager")
        if status != "accepted" and ev.get("reason"):
            line.append(f": {shorten(str(ev.get('reason')), 140)}")
        return line
    if kind == "step_done":
        best = ev.get("best_speedup")
        if ev.get("stop") == "space_exhausted":
            return Text(f"step {step}: the offline coder has measured every variant it can write for this task; "
                        "the run stops here" + (f" (best {best:.2f}x over eager)" if best else ""))
        return Text(f"step {step} done" + (f": best {best:.2f}x over eager" if best else ""))
    if kind == "interrupt":
        return Text.assemble(f"step {step}: ", ("paused for you", "yellow"),
                             f": planned direction {ev.get('direction')}; /steer accept, /steer direction ID, "
                             "/steer code FILE or /steer stop")
    if kind == "memory" and ev.get("line"):  # where the memory's experience comes from (shipped, own)
        return Text(str(ev["line"]), style="dim")
    if kind == "done":
        return Text(str(ev.get("headline")), style="bold")
    return None


def activity(ev: dict[str, Any]) -> str:
    """What is going on after this event, for the spinner."""
    kind, step = ev.get("event"), ev.get("step")
    if kind == "generate":
        return f"step {step}: writing and compiling variant {ev.get('variant')}"
    if kind == "generated":
        return f"step {step}: verifying and timing variant {ev.get('variant')}"
    if kind == "verdict":
        return f"step {step}: recording the verdict, planning what comes next"
    if kind in ("direction", "strategies", "analyze"):
        return f"step {step}: choosing the direction and strategies"
    if kind == "step_done":
        return f"after step {step}: analyzing for the next step"
    return f"step {step}: {kind}" if step is not None else str(kind)


class Ticker:
    """The spinner's text: the activity and the seconds since it started, recomputed on every refresh, so the
    clock runs between events."""

    def __init__(self, what: str) -> None:
        self.set(what)
        self.call_started = time.monotonic()

    def set(self, what: str) -> None:
        self.what = what
        self.since = time.monotonic()

    def __rich__(self) -> Text:
        now = time.monotonic()
        s = f"{self.what}: {now - self.since:.0f} s"
        if "compiling" in self.what and now - self.since > 20:
            s += " (a first build on a machine also compiles torch's headers: 1-2 min)"
        return Text(shorten(s, 76))


class TerminalChat:
    def __init__(self, session: ChatSession, console: Console | None = None) -> None:
        self.session = session
        self.console = console or Console()
        self._history: Path | None = None

    def say(self, text: Text | str, style: str | None = None, indent: int = 0) -> None:
        """Print text wrapped to the console's width, a line at a time (no markup is interpreted)."""
        for para in (text.split("\n") if isinstance(text, Text) else [Text(p) for p in text.split("\n")]):
            for line in wrap(para, self.console.width, indent):
                if style:
                    line.stylize(style)
                self.console.print(line, soft_wrap=True, highlight=False)

    def render(self, events: Iterable[ChatEvent], working: str | None = None) -> None:
        c = self.console
        stream = StreamWrap(c)
        ticker = Ticker(working or "working")
        status = c.status(ticker) if working else None
        if status is not None:
            status.start()
        try:
            for ev in events:
                if ev.kind == "token":
                    if status is not None:
                        status.stop()
                        status = None
                    stream.write(ev.text)
                    continue
                stream.end()
                if ev.kind == "tool_call":
                    self.say(f"... {ev.name}", style="dim", indent=2)
                    ticker = Ticker(f"{ev.name}: working")
                    status = status or c.status(ticker)
                    status.update(ticker)
                    status.start()
                elif ev.kind == "run":
                    line = event_line(ev.data)
                    if line is not None:
                        if status is not None:
                            status.stop()
                        self.say(line, indent=2)
                        if status is not None:
                            status.start()
                    ticker.set(activity(ev.data))
                elif ev.kind == "tool_result":
                    if status is not None:
                        status.stop()
                        status = None
                    self.say(f"{ev.name} -> {tool_summary(ev.name, ev.text)}", style="dim", indent=2)
                elif ev.kind == "reply":
                    if status is not None:
                        status.stop()
                        status = None
                    self.say(ev.text)
                elif ev.kind == "error":
                    if status is not None:
                        status.stop()
                        status = None
                    self.say(Text.assemble(("error: ", "red"), ev.text))
        finally:
            if status is not None:
                status.stop()
            stream.end()

    # -- input -------------------------------------------------------------------------------------------
    def enable_line_editing(self, history: Path) -> None:
        """Arrow keys, Ctrl-A/E/R and a history file (readline); nothing happens where readline is absent."""
        try:
            import readline
        except ImportError:
            return
        self._history = history
        try:
            history.parent.mkdir(parents=True, exist_ok=True)
            if history.is_file():
                readline.read_history_file(str(history))
        except OSError:
            self._history = None
        readline.set_history_length(1000)

    def save_history(self) -> None:
        if self._history is None:
            return
        try:
            import readline

            readline.write_history_file(str(self._history))
        except (ImportError, OSError):
            pass

    def read_message(self) -> str | None:
        try:
            line = input("you> ")
        except EOFError:
            return None
        if line.strip().startswith("```"):  # a pasted block: read to the closing fence
            lines = [line]
            while True:
                try:
                    more = input()
                except EOFError:
                    break
                lines.append(more)
                if more.strip() == "```":
                    break
            return "\n".join(lines)
        return line

    def turn(self, text: str) -> None:
        working = None
        if text.startswith("/") or self.session.agent is None:
            working = f"{text.split()[0] if text.startswith('/') else 'optimize'}: working"
        self.render(self.session.send(text), working)

    def loop(self, messages: list[str] | None = None) -> None:
        self.say(self.session.greeting())
        if messages:
            for m in messages:
                self.say(Text.assemble(("you> ", "bold"), m))
                self.turn(m)
            return
        self.enable_line_editing(self.session.manager.runs_dir / "chat" / "input_history")
        try:
            while True:
                text = self.read_message()
                if text is None or text.strip() in ("/quit", "/exit"):
                    break
                if text.strip():
                    self.turn(text)
        finally:
            self.save_history()


def goodbye(session: ChatSession, page: bool = False) -> str:
    """What stopping leaves behind, as it is: a run cut mid-step, one waiting for a decision, a finished one,
    or nothing (`page`: said by `htam ui`, whose answers are its buttons)."""
    m = session.manager
    head = "page stopped." if page else "stopped."
    rid = m.active or m.current
    if not rid and not page:
        return head
    try:
        view = m.view(rid)  # the page shows the newest run when none was picked
    except Exception:  # noqa: BLE001 - no run, or a folder gone since: nothing to say about it
        return head
    rid = view.run_id
    again = f"`htam ui --run {rid}`"
    if m.active:
        return (f"{head} Run {rid} was cut mid-step; it is checkpointed: "
                + (f"{again} and Resume" if page else f"`/resume {rid}` in a new chat")
                + " continue it (the step in progress starts again).")
    state = view.state()
    if state == "paused":
        return (f"{head} Run {rid} waits for your decision before step {(view.pause or {}).get('step')}: "
                + (f"{again} shows its buttons again." if page else "`/steer accept` (or another answer) in "
                   "a new chat continues it."))
    if state.startswith("stopped"):
        return f"{head} Run {rid} did not finish: " + (f"{again} and Resume continue it." if page else
                                                       f"`/resume {rid}` continues it.")
    return f"{head} Run {rid} is {state}: " + (f"{again} shows it again." if page else f"`/show {rid}` shows it.")


def run_terminal(session: ChatSession, messages: list[str] | None = None) -> None:
    chat = TerminalChat(session, Console(file=sys.stdout, highlight=False))
    try:
        chat.loop(messages)
    except KeyboardInterrupt:
        chat.console.print()
        chat.say(goodbye(session), style="yellow")
    finally:
        session.close()
