"""Run the KernelBench-targeted cheats and honest candidates (tests/cheats/kernelbench/) through the evaluator.

    python benchmarks/kernelbench_checks.py KB_DIR --out OUTDIR [--backend cuda] [--only SUBSTR] [--jobs N]
        [--size default|small|alt] [--tier default|thorough] [--baselines eager[,compile]]
        [--candidates-dir DIR] [--dry-run] [--judge-only]

The same command as `htam kernelbench-checks`: its options are `htam_agent.cli.kernelbench_checks`, the checks
(headers, the batch, the judging) `htam_agent.bench.kernelbench_checks`; see its docstring.
"""

import sys
from pathlib import Path

from htam_agent.cli.kernelbench_checks import main

CANDIDATES_DIR = Path(__file__).resolve().parents[1] / "tests" / "cheats" / "kernelbench"

if __name__ == "__main__":
    sys.exit(main(candidates_dir=CANDIDATES_DIR, prog="kernelbench_checks.py"))
