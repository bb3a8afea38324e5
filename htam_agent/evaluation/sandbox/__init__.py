"""The sandbox (untrusted): the one process that imports and runs candidate code; nothing it says is trusted.

Its modules: `__main__` (the process), `server` (the requests it answers), `probe` (the launch counting and
sabotage wrapped around the candidate's kernels), `build_cache` (its `load_inline`, which asks the checker to
build). It imports `common/`, `backends/` and `tasks/`, never `checker/` nor the parent's modules.
"""
