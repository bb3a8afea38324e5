"""The agent as users call it: `run_optimization` (one task, checkpointed, resumable) and the same as one
LangChain tool, `optimize_kernel` (`make_optimize_tool`, in `agent.tool`)."""

from .optimization import (
           EventHandler,
           InterruptHandler,
           RunInterrupted,
           prune_checkpoints,
           run_config,
           run_optimization,
)

__all__ = ["EventHandler", "InterruptHandler", "RunInterrupted", "prune_checkpoints", "run_config",
           "run_optimization"]
