"""Run the agent in a process the resume test can kill -9: `python run_in_subprocess.py RUN_ID SLEEP_STEP`."""

from __future__ import annotations

import sys

from htam_agent.agent import run_optimization
from htam_agent.context import RunContext
from tests.agent.scripted_coder import GOOD_SOFTMAX, ScriptedCoder, softmax_task

if __name__ == "__main__":
    run_id, sleep_step = sys.argv[1], int(sys.argv[2])
    ctx = RunContext.from_env(backend="cpp", steps=3, baselines=())
    run_optimization(softmax_task(), ctx, coder=ScriptedCoder([GOOD_SOFTMAX] * 3, sleep_at_step=sleep_step,
                                                              sleep_s=600), run_id=run_id)
