"""The fast-form KernelBench fixtures (tests/cheats/kernelbench/fast/) and the marker line they carry
(htam_agent.bench.launcher_marker): each expands to exactly what the coder's `to_fast_form` writes for its
usual-form twin in tests/cheats/kernelbench/honest/, so the fixtures cannot drift from the coder."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from htam_agent.bench import kernelbench_checks as kc
from htam_agent.bench import launcher_marker as lm
from htam_agent.coder.exemplar.fast_cuda import FAST_LAUNCHER, to_fast_form
from htam_agent.evaluation.backends import get_backend

KB = Path(__file__).resolve().parents[1] / "cheats" / "kernelbench"
FAST, USUAL = KB / "fast" / "honest", KB / "honest"
FIXTURES = sorted(FAST.glob("*.py"))
REGENERATE = "python -m htam_agent.bench.launcher_marker --fast-from {usual} > {fast}"


def test_every_usual_form_honest_file_has_its_fast_fixture_and_no_other():
    usual, fast = {p.name for p in USUAL.glob("*.py")}, {p.name for p in FIXTURES}
    assert len(fast) == 42
    assert usual - fast == set(), "write each: " + "; ".join(
        REGENERATE.format(usual=USUAL / n, fast=FAST / n) for n in sorted(usual - fast))
    assert fast - usual == set(), f"fast fixtures without a usual-form twin in {USUAL}: {sorted(fast - usual)}"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fast_fixture_expands_to_what_the_coder_writes(path: Path):
    text = path.read_text()
    assert text.count(lm.MARKER) == 1 and lm.has_marker(text), f"{path}: needs one '{lm.MARKER}' line"
    assert "_FAST_GLUE" not in text and "torch.cuda._compile_kernel(" not in text, (
        f"{path}: holds a pasted launcher or an NVRTC call; " + REGENERATE.format(usual=USUAL / path.name, fast=path))
    expanded = lm.source_of(path)
    compile(expanded, str(path), "exec")  # a SyntaxError fails the test with its line
    entry = kc.parse_header(path, "honest")
    twin = kc.parse_header(USUAL / path.name, "honest")
    assert (entry.kernelbench, entry.expect) == (twin.kernelbench, "accepted"), path
    assert f"kernelbench: {entry.kernelbench}" in (ast.get_docstring(ast.parse(expanded)) or ""), path
    assert expanded == to_fast_form((USUAL / path.name).read_text()), (
        f"{path} drifted from the coder; " + REGENERATE.format(usual=USUAL / path.name, fast=path))
    assert get_backend("cuda").static_problems(expanded) == [], path


def test_the_fast_folder_is_a_candidates_folder_for_the_kernelbench_checks():
    entries = kc.collect(KB / "fast")
    assert [e.path for e in entries] == FIXTURES and {e.expect for e in entries} == {"accepted"}
    assert all(not e.path.is_relative_to(KB / "fast") for e in kc.collect(KB))  # not collected twice


def test_expand_and_collapse():
    body = 'import torch\n\n# <<FAST_CUDA_LAUNCHER>>\n\nk = _fast_kernel(SRC, "k")\n'
    expanded = lm.expand(body)
    assert expanded == 'import torch\n\n' + FAST_LAUNCHER + '\nk = _fast_kernel(SRC, "k")\n'
    assert lm.collapse(expanded) == body
    mention = f'x = "{lm.MARKER}"  # not a line of its own\n'
    assert not lm.has_marker(mention) and lm.expand(mention) == mention
    with pytest.raises(ValueError, match=r"cand\.py: # <<FAST_CUDA_LAUNCHER>> on lines 3, 4; keep one"):
        lm.expand(body.replace(lm.MARKER, lm.MARKER + "\n" + lm.MARKER), where="cand.py")


def test_the_command_prints_the_standalone_candidate_and_the_fixture(capsys):
    path = FIXTURES[0]
    assert lm.main([str(path)]) == 0
    assert capsys.readouterr().out == lm.source_of(path)
    assert lm.main(["--fast-from", str(USUAL / path.name)]) == 0
    assert capsys.readouterr().out == path.read_text()
    assert lm.main([]) == 2 and "usage" in capsys.readouterr().err
