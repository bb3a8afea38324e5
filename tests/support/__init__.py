"""Test support: a scripted OpenAI-compatible server, a LangSmith ingestion recorder, and their fixtures.

Import as `support.<module>` (pytest puts `tests/` on sys.path through the top-level conftest.py); register
the fixtures in a conftest.py with `from support.fixtures import *  # noqa: F401,F403`.
"""
