"""The checker (trusted): the process that assembles every verdict and never imports candidate code.

Its modules: `__main__` (the process), `phases` (the evaluation, phase by phase), `sandbox_client` (its end of
the sandbox), `inputs`, `judge`, `correctness`, `timing`, `roofline`, `static`. It imports `common/`,
`backends/` and `tasks/`, never `sandbox/` (the sandbox is started by module name) nor the parent's modules.
"""
