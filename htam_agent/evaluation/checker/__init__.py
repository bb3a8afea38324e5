"""The checker (trusted): the process that assembles every verdict and never imports candidate code.

Its modules: `__main__` (the process), `job` (one job from its first phase to its verdict), `state` (the run the
phases share, and the events to the parent), `phases` (the evaluation, phase by phase), `timed_calls` (the
timed requests and the checker's clock around them), `sandbox_client` (its end of the sandbox), `inputs`,
`judge`, `correctness`, `timing`, `roofline`, `static`. It imports `common/`, `backends/` and `tasks/`, never
`sandbox/` (the sandbox is started by module name) nor the parent's modules.
"""
