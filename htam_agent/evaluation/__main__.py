"""`python -m htam_agent.evaluation eval|batch`: the evaluator alone on a bare GPU host (parent/commands.py)."""

import sys

from .parent.commands import main

if __name__ == "__main__":
    sys.exit(main())
