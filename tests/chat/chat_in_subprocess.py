"""The terminal chat in its own process (the test kills it mid-run): argv = scripted server URL, steps, message.

Run with tests/ on PYTHONPATH (the test sets it)."""

from __future__ import annotations

import sys

from chat.scripted import session
from htam_agent.chat.terminal import run_terminal

if __name__ == "__main__":
    run_terminal(session(sys.argv[1], steps=int(sys.argv[2])), [sys.argv[3]])
