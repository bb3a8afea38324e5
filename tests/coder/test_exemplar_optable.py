"""The exemplar coder's op table: an op is added with one row, and its spellings are aliases of that row.

`Softshrink` is not in the shipped table; the tests register it through `optable.register` (the path the module
docstring documents) and check that every spelling (`nn.Softshrink`, `F.softshrink`) then lowers, on the fixed
elementwise family (which writes triton) and in a staged program (cuda, cpp), with the scalar read at run time.
A slow test builds the cpp candidate and compares it with the reference.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator

import pytest

from htam_agent.coder.base import UnsupportedTask
from htam_agent.coder.exemplar import optable
from htam_agent.coder.exemplar.enumerate import enumerate_candidates
from htam_agent.coder.exemplar.patterns import recognize

_HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
_TAIL = '''

def get_inputs():
    return [torch.randn(6, 40, 24)]


def get_init_inputs():
    return [0.3]
'''
MODULE_TASK = _HEAD + '''class Model(nn.Module):
    def __init__(self, lambd):
        super().__init__()
        self.shrink = nn.Softshrink(lambd)

    def forward(self, x):
        return self.shrink(x) * 2.0
''' + _TAIL
STAGED_TASK = _HEAD + '''class Model(nn.Module):
    def __init__(self, lambd):
        super().__init__()
        self.lambd = lambd

    def forward(self, x):
        return torch.sum(F.softshrink(x, self.lambd), dim=1)
''' + _TAIL

SOFTSHRINK = optable.OpRow(
    "softshrink",
    c="({x} > {a1} ? {x} - {a1} : ({x} < -{a1} ? {x} + {a1} : 0.0f))",
    triton="tl.where({x} > {a1}, {x} - {a1}, tl.where({x} < -{a1}, {x} + {a1}, 0.0))",
    functions=("softshrink",), modules=("Softshrink",), scalars=(optable.Scalar(1, "lambd", 0.5, "lambd"),))


@pytest.fixture
def softshrink() -> Iterator[optable.OpRow]:
    row = optable.register(SOFTSHRINK)
    try:
        yield row
    finally:
        optable.unregister("softshrink")


def test_unregistered_op_is_refused():
    for name, src in (("module", MODULE_TASK), ("staged", STAGED_TASK)):
        with pytest.raises(UnsupportedTask, match="Softshrink|softshrink"):
            recognize(src, f"shrink_{name}_before")


def test_one_row_adds_the_op_on_every_backend(softshrink):
    pat = recognize(MODULE_TASK, "shrink_module")
    assert pat.family == "elementwise"  # the row has a Triton form, so the fixed family (triton too) takes it
    assert [s.op for s in pat.chain.steps] == ["softshrink", "mul"]
    assert pat.chain.scalars == ("float(self.shrink.lambd)",)  # read from the module at run time, not baked
    for backend, expect in (("cuda", "(a0 > s0 ? a0 - s0 : (a0 < -s0 ? a0 + s0 : 0.0f))"),
                            ("cpp", "(a0 > s0 ? a0 - s0 : (a0 < -s0 ? a0 + s0 : 0.0f))"),
                            ("triton", "tl.where(a0 > s0, a0 - s0, tl.where(a0 < -s0, a0 + s0, 0.0))")):
        code = enumerate_candidates(MODULE_TASK, backend, "shrink_module")[0][2]
        assert expect in code, backend
        assert "0.3" not in code  # the init argument is not baked in (cheat pattern 12)

    staged = recognize(STAGED_TASK, "shrink_staged")
    assert staged.family == "staged" and staged.description == "staged program: reduce:sum"
    stage = staged.extra["program"].stages[0]
    assert stage.inp.op == "softshrink" and stage.inp.args[1].val == "float(self.lambd)"
    for backend in ("cuda", "cpp"):
        code = enumerate_candidates(STAGED_TASK, backend, "shrink_staged")[0][2]
        assert "S0 ? LD(P0, i) - S0" in code, backend


def test_alias_and_name_clashes_are_refused(softshrink):
    with pytest.raises(optable.TableError, match="already registered"):
        optable.register(optable.OpRow("shrink2", c="{x}", functions=("softshrink",)))
    with pytest.raises(optable.TableError, match="field c"):
        optable.register(optable.OpRow("formless", functions=("formless",)))
    with pytest.raises(optable.TableError, match="field emit"):
        optable.register(optable.OpRow("ghost", emit="no_such_row"))


def test_function_and_module_spellings_share_one_row():
    for row in optable.ROWS.values():
        for alias in row.functions:
            assert optable.FUNCTIONS[alias] is row
        for cls in row.modules:
            assert optable.MODULES[cls] is row
    assert optable.MODULES["LeakyReLU"] is optable.FUNCTIONS["leaky_relu"]
    assert optable.FUNCTIONS["hardtanh"].op == optable.FUNCTIONS["clip"].op == "clamp"


@pytest.mark.slow
def test_registered_op_cpp_candidate_matches_reference(softshrink, tmp_path, build_root, monkeypatch):
    pytest.importorskip("torch.utils.cpp_extension")
    import torch
    from support.session_builds import route_load_inline

    route_load_inline(monkeypatch, build_root)  # the session's precompiled torch header: ~10 s less per build

    for stem, src in (("shrink_module", MODULE_TASK), ("shrink_staged", STAGED_TASK)):
        code = enumerate_candidates(src, "cpp", stem)[0][2]
        mods = []
        for name, text in ((f"{stem}_ref", src), (f"{stem}_new", code)):
            path = tmp_path / f"{name}.py"
            path.write_text(text)
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            mods.append(module)
        ref, new = mods
        torch.manual_seed(0)
        model = ref.Model(*ref.get_init_inputs())
        cand = new.ModelNew(*ref.get_init_inputs())
        cand.load_state_dict(model.state_dict())
        for lambd in (0.3, 0.7):  # a changed attribute is read at run time
            (model.shrink if hasattr(model, "shrink") else model).lambd = lambd
            (cand.shrink if hasattr(cand, "shrink") else cand).lambd = lambd
            x = torch.randn(5, 37, 19)
            torch.testing.assert_close(cand(x), model(x), rtol=1e-4, atol=1e-4)
