"""`htam chat`: the chat in a terminal (rich): the reply's tokens as they stream, a line per run event (step,
direction, strategies, verdict) and a spinner with the current activity while a step takes long.

Paste code between two lines of three backticks. `-m TEXT` sends messages without a prompt (scripts, tests).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape

from .agent import ChatEvent, ChatSession

STYLE = {"accepted": "green", "incorrect": "red", "compile_error": "red", "rejected": "magenta"}


def event_line(ev: dict[str, Any]) -> str | None:
    """One line of progress for a run event (None: not worth a line)."""
    kind, step = ev.get("event"), ev.get("step")
    if kind == "analyze":
        return f"step {step}: {ev.get('op_class')} operator, {ev.get('bottleneck')}-bound"
    if kind == "direction":
        return f"step {step}: direction [bold]{ev.get('direction')}[/bold] ({escape(str(ev.get('reason', ''))[:90])})"
    if kind == "strategies":
        return f"step {step}: strategies {', '.join(ev.get('strategies') or []) or '-'}"
    if kind == "verdict":
        s = ev.get("speedup_vs_eager")
        status = str(ev.get("status"))
        return (f"step {step}: candidate {ev.get('variant')} (repair {ev.get('repair')}) "
                f"[{STYLE.get(status, 'yellow')}]{status}[/]" + (f" {s:.2f}x over eager" if s else "")
                + ("" if status == "accepted" else f": {escape(str(ev.get('reason', ''))[:120])}"))
    if kind == "step_done":
        best = ev.get("best_speedup")
        return f"step {step} done" + (f": best {best:.2f}x over eager" if best else "")
    if kind == "interrupt":
        return (f"step {step}: [yellow]paused for you[/yellow]: planned direction {ev.get('direction')}; "
                "accept, pick another direction, give code or stop")
    if kind == "done":
        return f"[bold]{escape(str(ev.get('headline')))}[/bold]"
    return None


def activity(ev: dict[str, Any]) -> str:
    kind, step = ev.get("event"), ev.get("step")
    if kind == "generate":
        return f"step {step}: writing candidate {ev.get('variant')}"
    if kind == "generated":
        return f"step {step}: compiling, verifying and timing candidate {ev.get('variant')}"
    return f"step {step}: {kind}" if step is not None else str(kind)


class TerminalChat:
    def __init__(self, session: ChatSession, console: Console | None = None) -> None:
        self.session = session
        self.console = console or Console()

    def render(self, events: Iterable[ChatEvent]) -> None:
        c = self.console
        status = None
        streaming = False
        started = time.monotonic()
        try:
            for ev in events:
                if ev.kind == "token":
                    if status is not None:
                        status.stop()
                        status = None
                    if not streaming:
                        c.print("[bold cyan]htam>[/bold cyan] ", end="")
                        streaming = True
                    c.file.write(ev.text)
                    c.file.flush()
                    continue
                if streaming:
                    c.file.write("\n")
                    streaming = False
                if ev.kind == "tool_call":
                    c.print(f"[dim]... {ev.name}[/dim]")
                    started = time.monotonic()
                    status = status or c.status(f"{ev.name}: working")
                    status.start()
                elif ev.kind == "run":
                    line = event_line(ev.data)
                    if line:
                        if status is not None:
                            status.stop()
                        c.print("  " + line)
                    if status is not None:
                        status.update(f"{activity(ev.data)} ({time.monotonic() - started:.0f} s into the call)")
                        status.start()
                elif ev.kind == "tool_result":
                    if status is not None:
                        status.stop()
                        status = None
                    short = ev.text if len(ev.text) < 300 else ev.text[:300] + "..."
                    c.print(f"[dim]  {ev.name} -> {short}[/dim]", markup=False, highlight=False)
                elif ev.kind == "reply":
                    c.print(ev.text, markup=False, highlight=False)
                elif ev.kind == "error":
                    c.print(f"[red]error:[/red] {escape(ev.text)}", highlight=False)
        finally:
            if status is not None:
                status.stop()
            if streaming:
                c.file.write("\n")
                c.file.flush()

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

    def loop(self, messages: list[str] | None = None) -> None:
        self.console.print(self.session.greeting(), markup=False, highlight=False)
        if messages:
            for m in messages:
                self.console.print(f"[bold]you>[/bold] {escape(m)}", highlight=False)
                self.render(self.session.send(m))
            return
        while True:
            text = self.read_message()
            if text is None or text.strip() in ("/quit", "/exit"):
                break
            self.render(self.session.send(text))


def run_terminal(session: ChatSession, messages: list[str] | None = None) -> None:
    chat = TerminalChat(session, Console(file=sys.stdout, highlight=False))
    try:
        chat.loop(messages)
    except KeyboardInterrupt:
        chat.console.print("\n[yellow]stopped.[/yellow] Runs are checkpointed: `/resume RUN_ID` (or ask to resume) "
                           "continues where they stopped.")
    finally:
        session.close()
