"""One FX reading of the reference, one operator classifier: the analyze node and the offline coder agree."""

from __future__ import annotations

import pytest
import torch.fx
from exemplar_helpers import COVERED, task_source

from htam_agent.bundled_tasks import SUITE_DIR
from htam_agent.coder.exemplar.patterns import recognize
from htam_agent.coder.opclass import classify
from htam_agent.coder.reference import ReferenceReadError, read_reference
from htam_agent.nodes.analyze import reference_facts

SCALED = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale + 2.0

def get_inputs():
    return [torch.randn(8, 16)]

def get_init_inputs():
    return [0.5]
'''


@pytest.fixture
def traces(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every torch.fx trace made while the test runs (by the traced module's class name)."""
    seen: list[str] = []
    real = torch.fx.symbolic_trace

    def counting(root, *args, **kwargs):  # noqa: ANN001, ANN202 - torch.fx's own signature
        seen.append(type(root).__name__)
        return real(root, *args, **kwargs)

    monkeypatch.setattr(torch.fx, "symbolic_trace", counting)
    return seen


def test_the_analyze_node_reads_the_reference_once(traces: list[str]) -> None:
    ops, shapes = reference_facts(SCALED, "scaled.py")
    assert traces == ["Model"]  # operators and shapes from one trace (there were two)
    assert ops == ["relu", "mul", "add"]
    assert shapes == {"elements": 128, "row": 16}


def test_the_coder_reads_the_reference_once_plus_its_sentinel_trace(traces: list[str]) -> None:
    pattern = recognize(SCALED, "scaled")
    assert traces == ["Model", "Model"]  # the graph, then the copy with constructor scalars set to sentinels
    assert pattern.chain is not None and pattern.chain.scalars == ("float(self.scale)",)


def test_the_reading_marks_constructor_scalars_and_shapes() -> None:
    ref = read_reference(SCALED, "scaled.py", sentinels=True)
    assert ref.shaped and ref.forward_args == ["x"]
    assert list(ref.sentinels.values()) == ["self.scale"]
    out = [n for n in ref.gm.graph.nodes if n.op == "output"][0].args[0]
    assert tuple(out.meta["tensor_meta"].shape) == (8, 16)
    with pytest.raises(ReferenceReadError, match="building the reference Model on the meta device failed"):
        read_reference("x = 1\n", "broken.py")


@pytest.mark.parametrize("stem", sorted(COVERED))
def test_a_pattern_has_the_analyze_nodes_class(stem: str) -> None:
    """One classifier: the coder's pattern carries the class the analyze node gives the same task (the verdict
    table keys its records by it, and the memory its transitions)."""
    source = task_source(stem)
    ops, _ = reference_facts(source, str(SUITE_DIR / f"{stem}.py"))
    assert recognize(source, stem).op_class == classify(ops)
