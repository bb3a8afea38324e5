"""The parent (trusted): the process that asks for verdicts, and the only one of the evaluator that callers import.

Its modules: `gateway` (the one door from a candidate to its verdict: local or replayed, the device lock),
`evaluator` (store, baselines, batches), `candidate` (what is evaluated), `job` (one job in one checker: its
events, its limit, the verdict of a checker that gave none), `pool` (checkers started ahead of their jobs, the
environment they get), `launcher_client` (its handle on the launcher that forks them), `options` (`EvalOptions`
and the command-line table both command lines are built from), `store` (verdicts by content key), `readout`
(the one reader of a verdict) and `commands` (`python -m htam_agent.evaluation eval|batch`).

It never imports candidate code, nor the checker, the sandbox or the launcher (each is started by
module name). It runs the task file itself (trusted) where it derives a KernelBench file's sizes, which imports
torch, and `gateway.resolve_mode("auto")` asks torch whether a GPU is visible; the rest is the standard library.
"""
