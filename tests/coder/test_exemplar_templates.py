"""The staged family's kernel text lives in template files that ship in the wheel, one emitter per stage kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_agent.coder.exemplar import templating
from htam_agent.coder.exemplar.stages import EMITTERS, emitter

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "htam_agent" / "coder" / "exemplar" / "templates"


def test_templates_are_package_data():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "templates/*.tmpl" in data["htam_agent.coder.exemplar"]
    files = sorted(p.name for p in TEMPLATES.iterdir() if p.is_file())
    assert files and all(f.endswith(".tmpl") for f in files), files  # nothing the glob would leave out


def test_every_stage_kind_has_an_emitter_and_templates():
    assert sorted(EMITTERS) == ["map", "norm", "pool", "reduce", "scan"]
    for kind in EMITTERS:
        assert (TEMPLATES / f"{kind}.cu.tmpl").is_file() and (TEMPLATES / f"{kind}.cpp.tmpl").is_file()
    with pytest.raises(ValueError, match="no emitter for stage kind 'gather'"):
        emitter("gather")


def test_missing_template_or_section_names_the_file():
    with pytest.raises(templating.TemplateMissing, match="templates/norm.cu.tmpl: no section 'nope'"):
        templating.raw("norm.cu.tmpl", "nope")
    with pytest.raises(templating.TemplateMissing, match="templates/nope.cu.tmpl: no such template file"):
        templating.raw("nope.cu.tmpl")
    with pytest.raises(KeyError, match="unroll"):
        templating.fill("map.cu.tmpl", "kernel", params="", scalars="", lambdas="")
