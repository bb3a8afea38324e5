"""htam-agent: make GPU kernels faster with an LLM and a memory that learns.

Importing the package is cheap on purpose: the heavy parts (torch, LangGraph, Chroma) load only in the
submodules that need them.
"""

__version__ = "0.1.0"
