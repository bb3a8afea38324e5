"""Keeping the candidate's processes in a box the checker controls (Linux; stdlib only): one module per kernel
mechanism, each applied by a process to itself or to its children.

- `process_tree`: the checker as child subreaper (every descendant re-parented to it, stopped, then killed),
  not dumpable; forks that never return into the caller's code;
- `sandbox_uid`: a uid of its own per sandbox where the evaluator is root and no GPU needs CUDA IPC (a slot
  under an flock, RLIMIT_NPROC and RLIMIT_FSIZE, every process of the uid killed after the evaluation);
- `privileges`: capabilities dropped, or root turned into the sandbox's uid; also the stdlib-only script a
  sandbox uid starts through;
- `cgroup`: a cgroup v2 of its own where writable (root): `cgroup.kill`, a second net, and `cgroup.freeze`;
- `landlock`: the sandbox writes only below its scratch folder, and signals nothing outside its domain;
- `scratch_quota`: a watchdog that kills the sandbox when what it wrote grows past its quota.
"""
