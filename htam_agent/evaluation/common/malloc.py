"""glibc malloc's thresholds for every evaluation process: set by the parent (`parent/pool.scrubbed_env`) and
relied on by the checker (`checker/phases.poison_below`: from this size up a freed block is a mapping of its own,
unmapped when freed), so both read the one value here."""

from __future__ import annotations

MALLOC_MMAP_THRESHOLD = 32 << 20  # glibc's largest: blocks up to 32 MB come from the heap
MALLOC_TRIM_THRESHOLD = 1 << 30   # freed heap memory stays with the process
