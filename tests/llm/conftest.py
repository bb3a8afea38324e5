"""Fixtures for the LLM tests: the scripted OpenAI server, the LangSmith recorder (tests/support)."""

from support.fixtures import *  # noqa: F401,F403
