"""Drive `htam chat` through a pseudo-terminal of a given width, as a person at a terminal would: wait for the
prompt, type a line, read what comes back. What comes back is what the terminal shows once the bytes are
played on a minimal screen (carriage return, erase line, cursor up; colours dropped; no automatic wrap, so a
line too long for the terminal stays one long line a test can see), e.g. a spinner's frames overwrite each
other and vanish as they do on a real terminal."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_ESC = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[=>]")


_CSI = re.compile(r"\x1b\[([0-9;?]*)([ -/]*)([@-~])|\x1b\][^\x07]*\x07|\x1b[=>]")


def plain(raw: bytes) -> str:
    """The byte stream with every escape removed (frames of a spinner included): for finding markers."""
    return _ESC.sub("", raw.decode("utf-8", "replace")).replace("\r\n", "\n").replace("\r", "")


def screen(raw: bytes) -> list[str]:
    """The lines a terminal shows after playing `raw` (scrollback included)."""
    lines: list[list[str]] = [[]]
    row = col = 0
    text = raw.decode("utf-8", "replace")
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\x1b":
            m = _CSI.match(text, i)
            if m is None:
                i += 1
                continue
            i = m.end()
            if m.group(3) is None:
                continue
            arg, final = m.group(1), m.group(3)
            n = int(arg) if arg.isdigit() else 1
            if final == "K":  # erase in line: 0 to the end, 1 to the cursor, 2 all
                line = lines[row]
                if arg in ("", "0"):
                    del line[col:]
                elif arg == "2":
                    line.clear()
                else:
                    line[:col] = [" "] * min(col, len(line))
            elif final == "A":
                row = max(0, row - n)
            elif final == "B":
                row += n
                while len(lines) <= row:
                    lines.append([])
            elif final == "G":
                col = max(0, n - 1)
            continue
        i += 1
        if ch == "\n":
            row += 1
            col = 0  # the terminal turns "\n" into "\r\n" (onlcr)
            while len(lines) <= row:
                lines.append([])
        elif ch == "\r":
            col = 0
        elif ch == "\b":
            col = max(0, col - 1)
        elif ch >= " ":
            line = lines[row]
            if col < len(line):
                line[col] = ch
            else:
                line.extend(" " * (col - len(line)))
                line.append(ch)
            col += 1
    return ["".join(line).rstrip() for line in lines]


class PtyChat:
    def __init__(self, args: list[str], cwd: Path, columns: int = 80, rows: int = 40,
                 command: list[str] | None = None) -> None:
        """args: `htam chat`'s arguments; command: another program instead (e.g. a script with test settings)."""
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
               "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)}
        argv = command or [sys.executable, "-m", "htam_agent", "chat", *args]
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env,
                                     stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.raw = b""

    def read_until(self, marker: str, timeout: float) -> str:
        """Everything so far once `marker` shows after the last read (or raise, with what came)."""
        start = len(plain(self.raw))
        deadline = time.time() + timeout
        while time.time() < deadline:
            text = plain(self.raw)
            if marker in text[start:]:
                return text
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.raw += os.read(self.master, 65536)
                except OSError:  # the child closed the terminal
                    break
        raise TimeoutError(f"no {marker!r} within {timeout:.0f} s; the terminal showed:\n{plain(self.raw)[-3000:]}")

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def say(self, line: str, timeout: float = 120.0) -> str:
        """Type a line and wait for the next prompt; returns the screen's lines from the typed one on."""
        before = len(screen(self.raw)) - 1
        self.type(line + "\r")
        self.read_until("you> ", timeout)
        return "\n".join(screen(self.raw)[before:])

    def close(self) -> str:
        self.type("/quit\r")
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        try:
            while select.select([self.master], [], [], 0.2)[0]:
                self.raw += os.read(self.master, 65536)
        except OSError:
            pass
        os.close(self.master)
        return "\n".join(screen(self.raw))
