"""Shared leaves of the evaluator: imported by the parent, the launcher, the checker and the sandbox; they import
none of them.

- `protocol`: the wire, both of its ends (a message is written by one side and read by the other);
- `verdict`: the verdict's schema (`Verdict`, a TypedDict: the wire and store format) and its one writer,
  `VerdictBuilder`, sealed by one `finalize`; used by the checker, and by the parent for the verdicts no
  checker gave (no code, not evaluated, a checker that died); `with_envelope` puts the parent's facts beside it;
- `containment/`: the kernel mechanisms each process applies to itself or to its children, one module each
  (`process_tree`, `sandbox_uid`, `privileges`, `cgroup`, `landlock`, `scratch_quota`); `privileges.py` also
  runs as a stdlib-only script (the uid launcher);
- `builder`: the content-keyed extension build, run by the checker into the shared cache and by the sandbox
  into its private folder;
- `observe`: what both sides observe about a forward (flattened outputs, bitwise sameness, ATen ops).
"""
