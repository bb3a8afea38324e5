"""Drive `htam chat` through a pseudo-terminal of a given width, as a person at a terminal would: wait for the
prompt, type a line, read what comes back. The output is the terminal's byte stream with colour and cursor
escapes removed, so tests see the lines a person sees."""

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


def plain(raw: bytes) -> str:
    return _ESC.sub("", raw.decode("utf-8", "replace")).replace("\r\n", "\n").replace("\r", "")


class PtyChat:
    def __init__(self, args: list[str], cwd: Path, columns: int = 80, rows: int = 40) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": str(columns),
               "LINES": str(rows)}
        self.proc = subprocess.Popen([sys.executable, "-m", "htam_agent", "chat", *args], cwd=cwd, env=env,
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
        """Type a line and wait for the next prompt; returns what was printed in between."""
        before = len(plain(self.raw))
        self.type(line + "\r")
        self.read_until("you> ", timeout)
        return plain(self.raw)[before:]

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
        return plain(self.raw)
