"""The notebook runs end to end (real kernel, offline coder, cpp backend) and shows the report."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "optimize_end_to_end.ipynb"


def test_notebook_executes(agent_env: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=1200, kernel_name="python3", resources={"metadata": {"path": str(agent_env)}}).execute()
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    # the first cell's line: the offline coder on the cpp backend, as the notebook's defaults say
    assert "fused_gemm_relu_divide.py | exemplar coder (no LLM), backend cpp, 2 steps x" in text, text[:500]
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    markdown = [o for c in nb.cells for o in c.get("outputs", []) if "text/markdown" in o.get("data", {})]
    assert len(images) == 2 and markdown and "htam run" in markdown[0]["data"]["text/markdown"]
    assert "fused_gemm_relu_divide" in text
