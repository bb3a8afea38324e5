"""`python -m htam_agent` is the `htam` command (works where console scripts are not on PATH)."""

from htam_agent.cli import main

main()
