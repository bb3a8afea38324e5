"""The terminal chat in its own process: argv = scripted server URL, steps, message (the test kills it
mid-run); or `--interactive STEPS`, the chat reading its terminal with no model, as `htam chat` does, with the
tests' run settings (eager baseline only, no repairs).

Run with tests/ on PYTHONPATH (the test sets it)."""

from __future__ import annotations

import sys

from chat.scripted import run_context, session
from htam_agent.chat.agent import ChatSession
from htam_agent.chat.runs import RunManager
from htam_agent.chat.terminal import run_terminal

if __name__ == "__main__":
    if sys.argv[1] == "--interactive":
        run_terminal(ChatSession(RunManager(run_context(int(sys.argv[2])))))
    else:
        run_terminal(session(sys.argv[1], steps=int(sys.argv[2])), [sys.argv[3]])
