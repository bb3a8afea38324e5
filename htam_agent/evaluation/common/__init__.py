"""Shared leaves of the evaluator: imported by the parent, the checker and the sandbox; they import none of them.

- `protocol`: the wire, both of its ends (a message is written by one side and read by the other);
- `verdict`: the verdict's schema (a TypedDict) and its helpers (`new_verdict`, `add_flag`, `finalize`), used by
  the checker and by the parent for a checker that died without a verdict;
- `containment`: kernel mechanisms (Landlock, capabilities, uids, cgroups, kills) that each process applies
  to itself or to its children; it also runs as a stdlib-only script (the uid launcher);
- `builder`: the content-keyed extension build, run by the checker into the shared cache and by the sandbox
  into its private folder;
- `observe`: what both sides observe about a forward (flattened outputs, bitwise sameness, ATen ops).
"""
