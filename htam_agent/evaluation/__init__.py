"""The evaluator: task loading, backends, isolated worker, correctness, timing and anti-cheat checks.

This package imports only torch, numpy and the standard library, so `python -m htam_agent.evaluation` runs
on a bare GPU host that has none of the agent's other dependencies.
"""
