"""Only what pyproject.toml cannot say (the metadata lives there).

The prompt templates live in the repository's top-level `prompts/` folder, where users find and override them;
the wheel ships them inside the package as `htam_agent/prompts/` (htam_agent/coder/prompting.py reads the
checkout's folder first, then the package's copy).
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["htam_agent*"]), "htam_agent.prompts"],
    package_dir={"htam_agent.prompts": "prompts"},  # its package-data ("*.md") is in pyproject.toml
)
