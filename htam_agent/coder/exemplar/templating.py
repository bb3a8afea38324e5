"""The exemplar coder's kernel templates: files under `templates/`, read once, filled with `string.Template`.

A template file holds either one template (the whole file) or named sections, each starting at a line
`//@@ name` and running to the next such line (the newline before it is not part of the section); text above
the first section is the file's comment. Placeholders are `${name}`; C and Python braces stay as written.
The files ship in the wheel as package data (pyproject.toml, `htam_agent.coder.exemplar`).
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from string import Template

_MARK = "//@@ "


class TemplateMissing(LookupError):
    """A template file or section that is not there (a packaging error, or a typo in an emitter)."""


@cache
def _sections(name: str) -> dict[str, str]:
    try:
        text = (files(__package__) / "templates" / name).read_text()
    except FileNotFoundError:
        raise TemplateMissing(f"htam_agent/coder/exemplar/templates/{name}: no such template file (is it in "
                              "the wheel's package-data?)") from None
    if _MARK not in text:
        return {"": text}
    out: dict[str, str] = {}
    for chunk in re.split(f"^{_MARK}", text, flags=re.M)[1:]:
        head, _, body = chunk.partition("\n")
        out[head.strip()] = body[:-1] if body.endswith("\n") else body
    return out


def raw(name: str, section: str = "") -> str:
    """A template's text as written (for fixed parts such as headers)."""
    secs = _sections(name)
    if section not in secs:
        raise TemplateMissing(f"htam_agent/coder/exemplar/templates/{name}: no section {section!r} "
                              f"(it has {sorted(secs)})")
    return secs[section]


def fill(name: str, section: str = "", **values: object) -> str:
    """A template with its `${...}` placeholders filled; a missing value raises KeyError naming it."""
    return Template(raw(name, section)).substitute({k: str(v) for k, v in values.items()})
