"""The launcher process (`python -m htam_agent.evaluation.launcher`): forks a fresh, pre-imported checker per job."""
