"""The evaluator: one folder per process and the leaves they share (docs/architecture.md, "The trust boundary").

`parent/` is what callers import (the gateway, the evaluator, the verdict store, `Readout`); `checker/` (trusted)
judges one candidate; `sandbox/` (untrusted) is the only code that runs beside one; `launcher/` forks pre-imported
checkers; `common/`, `tasks/` and `backends/` are leaves all of them import.

This package imports only torch, numpy and the standard library, so `python -m htam_agent.evaluation` runs
on a bare GPU host that has none of the agent's other dependencies.
"""
