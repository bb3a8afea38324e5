"""Pull a candidate file out of an LLM reply, or say precisely why there is none.

Rules, in order:
1. Reasoning (`<think>...</think>`) is dropped: drafts in it are not answers.
2. Fenced blocks (``` or ~~~, any language tag; a last block left open by a truncated reply counts).
   The Python block that defines `class ModelNew` is the candidate; when several do, the last one (models
   revise as they go) and the reason says so.
3. A separate kernel-source block is merged only when clearly needed: the candidate passes a module-level
   name that it never defines to `load_inline(cuda_sources=/cpp_sources=)`, `torch.cuda._compile_kernel` or
   the fast CUDA launcher's `_fast_kernel`,
   and exactly one unused non-Python block fits (CUDA code with `__global__` for CUDA sources, C++ for the
   declarations). Anything ambiguous is refused with a reason, so the coder asks again.
4. No fenced block: bare code that defines `ModelNew` is accepted (leading and trailing prose trimmed);
   prose only gives no code.
5. The code must parse, define `ModelNew` at module level, and be of the requested backend
   (`htam_agent.evaluation.backends.detect_backend`); otherwise no code, with the reason.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from htam_agent import threadsafe
from htam_agent.backend_registry import REGISTRY
from htam_agent.evaluation.backends import detect_backend

PYTHON_TAGS = {"", "python", "py", "python3", "py3", "ipython", "pycon"}
CUDA_TAGS = {"cuda", "cu", "cuh", "c++", "cpp", "cxx", "cc", "c", "h", "hpp"}
#: the kernel a reply of each backend holds, in a few words (the registry's `kernel`)
BACKEND_MARKS = {name: s.kernel for name, s in REGISTRY.items()}

_FENCE_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$", re.MULTILINE)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_MODELNEW = re.compile(r"^class[ \t]+ModelNew\b", re.MULTILINE)
_CODE_START = re.compile(r"^(?:import |from |class |def |@|\"\"\"|'''|#|[A-Za-z_][A-Za-z0-9_]*\s*=)")


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    closed: bool


@dataclass(frozen=True)
class Extraction:
    code: str | None
    reason: str                 # why there is no code, or how the code was chosen
    backend: str | None = None  # backend detected in the code (or in the rejected code)
    blocks: int = 0             # fenced blocks in the reply

    @property
    def ok(self) -> bool:
        return self.code is not None


def strip_reasoning(reply: str) -> str:
    text = _THINK.sub("", reply)
    # an unclosed <think> (reply cut off inside the reasoning): nothing after it is an answer
    low = text.lower()
    if "<think>" in low and "</think>" not in low:
        text = text[: low.index("<think>")]
    elif "</think>" in low and "<think>" not in low:
        # some servers strip the opening tag but leave the closing one
        text = text[low.rindex("</think>") + len("</think>"):]
    return text


def fenced_blocks(text: str) -> list[Block]:
    """Fenced blocks in order; a fence closes only with the same character, at least as long."""
    blocks: list[Block] = []
    pos = 0
    while True:
        m = _FENCE_OPEN.search(text, pos)
        if not m:
            return blocks
        fence = m.group("fence")
        lang = (m.group("info").strip().split() or [""])[0].lower().lstrip("{.").rstrip("}")
        body_start = m.end() + 1 if m.end() < len(text) else m.end()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        c = close.search(text, body_start)
        if c is None:
            blocks.append(Block(lang, textwrap.dedent(text[body_start:]), closed=False))
            return blocks
        blocks.append(Block(lang, textwrap.dedent(text[body_start:c.start()]), closed=True))
        pos = c.end()


def _parse_error(code: str) -> str | None:
    try:
        threadsafe.parse(code)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # null bytes
        return str(exc)
    return None


def _defines_modelnew(code: str) -> bool:
    return bool(_MODELNEW.search(code))


# ------------------------------------------------------------------------------------------------------
# merging a separate kernel-source block
# ------------------------------------------------------------------------------------------------------
def _module_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def _source_slots(tree: ast.Module) -> list[tuple[str, str]]:
    """(name, role) for names passed as kernel sources: role 'cuda' (kernels) or 'cpp' (C++ sources)."""
    slots: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if fname == "load_inline":
            for kw in node.keywords:
                if kw.arg in ("cuda_sources", "cpp_sources"):
                    for value in (kw.value.elts if isinstance(kw.value, (ast.List, ast.Tuple)) else [kw.value]):
                        if isinstance(value, ast.Name):
                            slots.append((value.id, "cuda" if kw.arg == "cuda_sources" else "cpp"))
        elif fname in ("_compile_kernel", "_fast_kernel") and node.args and isinstance(node.args[0], ast.Name):
            slots.append((node.args[0].id, "cuda"))
    return slots


def _literal(source: str) -> str:
    if '"""' not in source and not source.endswith("\\"):
        return f'r"""{source}"""'
    return repr(source)


def _merge_sources(code: str, others: list[Block], backend: str) -> tuple[str | None, str]:
    """Define kernel-source names the code uses but never assigns, from other blocks (only when clear)."""
    try:
        tree = threadsafe.parse(code)
    except SyntaxError:
        return code, ""
    defined = _module_names(tree)
    missing = [(n, role) for n, role in dict.fromkeys(_source_slots(tree)) if n not in defined]
    if not missing:
        return code, ""
    source_blocks = [b for b in others if b.lang in CUDA_TAGS
                     or (b.lang == "" and ("__global__" in b.code or "#include" in b.code))]
    used: set[int] = set()
    assignments: list[str] = []
    for name, role in missing:
        if role == "cuda" and backend == "cuda":
            fits = [i for i, b in enumerate(source_blocks) if i not in used and "__global__" in b.code]
        else:
            fits = [i for i, b in enumerate(source_blocks) if i not in used and "__global__" not in b.code]
        if len(fits) != 1:
            what = "no" if not fits else f"{len(fits)}"
            return None, (f"the code uses {name} as a kernel source but never defines it, and {what} separate "
                          f"source block(s) could be it; put the kernel source inside the Python file")
        used.add(fits[0])
        assignments.append(f"{name} = {_literal(source_blocks[fits[0]].code.strip(chr(10)) + chr(10))}")
    lines = code.splitlines(keepends=True)
    insert_at = 0
    for i, line in enumerate(lines):  # after `from __future__` imports, which must come first
        if line.startswith("from __future__"):
            insert_at = i + 1
    merged = "".join(lines[:insert_at]) + "\n".join(assignments) + "\n\n" + "".join(lines[insert_at:])
    names = ", ".join(n for n, _ in missing)
    return merged, f"; merged {len(missing)} separate source block(s) as {names}"


# ------------------------------------------------------------------------------------------------------
# bare code
# ------------------------------------------------------------------------------------------------------
def _bare_code(text: str) -> tuple[str | None, str]:
    lines = text.strip("\n").splitlines()
    starts = [i for i, line in enumerate(lines) if _CODE_START.match(line)]
    if not starts:
        return None, "the reply mentions class ModelNew but holds no code outside prose"
    for start in starts[:20]:
        for end in range(len(lines), start, -1):
            chunk = "\n".join(lines[start:end]).strip("\n")
            if not _defines_modelnew(chunk):
                break
            if _parse_error(chunk) is None:
                return chunk + "\n", "no code block; bare code in the reply"
    return None, "the reply defines ModelNew outside a code block, but that code does not parse"


# ------------------------------------------------------------------------------------------------------
# entry point
# ------------------------------------------------------------------------------------------------------
def _check(code: str, backend: str, how: str, nblocks: int) -> Extraction:
    error = _parse_error(code)
    detected = detect_backend(code)
    if error:
        return Extraction(None, f"the code does not parse ({error}); the reply may have been cut off",
                          detected, nblocks)
    tree = threadsafe.parse(code)
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        return Extraction(None, "class ModelNew is not defined at module level", detected, nblocks)
    if detected != backend:
        want = BACKEND_MARKS.get(backend, backend)
        if detected is None:
            return Extraction(None, f"the code has no {backend} kernel (expected {want})", None, nblocks)
        return Extraction(None, f"wrong backend: the code is a {detected} candidate "
                                f"({BACKEND_MARKS.get(detected, detected)}) but {backend} was requested "
                                f"(expected {want})", detected, nblocks)
    return Extraction(code if code.endswith("\n") else code + "\n", how, detected, nblocks)


def extract_code(reply: str, backend: str) -> Extraction:
    """The candidate in `reply` for `backend`, or None with the reason (see the module docstring)."""
    text = strip_reasoning(reply or "")
    if not text.strip():
        return Extraction(None, "the reply is empty" + (" (only reasoning, no answer)" if reply.strip() else ""))
    blocks = fenced_blocks(text)
    if blocks:
        with_model = [i for i, b in enumerate(blocks) if _defines_modelnew(b.code) and b.lang not in CUDA_TAGS]
        if not with_model:
            return Extraction(None, f"none of the reply's {len(blocks)} code block(s) defines class ModelNew",
                              None, len(blocks))
        # prefer the last block that parses; a last block cut off by the length limit does not
        parsing = [i for i in with_model if _parse_error(blocks[i].code) is None]
        pick = parsing[-1] if parsing else with_model[-1]
        block = blocks[pick]
        how = ("one code block" if len(blocks) == 1 else
               f"code block {pick + 1} of {len(blocks)} defines ModelNew")
        if len(with_model) > 1:
            how += f" (the last that parses of {len(with_model)} that define it)"
        others = [b for i, b in enumerate(blocks) if i != pick and not _defines_modelnew(b.code)]
        code, merged = _merge_sources(block.code, others, backend)
        if code is None:
            return Extraction(None, merged, detect_backend(block.code), len(blocks))
        return _check(code, backend, how + merged, len(blocks))
    if not _defines_modelnew(text):
        return Extraction(None, "the reply contains no code (no code block and no class ModelNew)")
    code, how = _bare_code(text)
    if code is None:
        return Extraction(None, how, detect_backend(text))
    return _check(code, backend, how, 0)


# ------------------------------------------------------------------------------------------------------
# the declaration line: what the reply says its code applies
# ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Declaration:
    """What a reply declares it applied. ``direction`` is a known direction id or None (absent or not
    recognised); ``strategies`` are known strategy ids; ``unknown`` keeps the names that matched nothing."""

    direction: str | None
    strategies: tuple[str, ...]
    raw: str
    unknown: tuple[str, ...] = ()


_DECL_LINE = re.compile(
    r"^[^\S\n]*(?:[-*>#/]+[^\S\n]*)?(?:\*\*|__|`)?[^\S\n]*(?:applied|htam[-_ ]?applied|declaration)"
    r"[^\S\n]*(?:\*\*|__|`)?[^\S\n]*(?:\*\*|__)?[:=](?P<body>[^\n]*)$", re.IGNORECASE | re.MULTILINE)
_DIR_KEY = re.compile(r"\b(?:direction|dir)\b\s*[:=]?\s*", re.IGNORECASE)
_STRAT_KEY = re.compile(r"\b(?:strateg(?:y|ies)|techniques?)\b\s*[:=]?\s*", re.IGNORECASE)
_NONE = {"", "none", "no", "n/a", "na", "-", "nothing", "null", "[]"}


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _match_direction(text: str, directions: dict[str, str]) -> str | None:
    """A direction id from free text: its id or name, exactly or as the start of the text, or mentioned once."""
    t = _norm(text)
    if not t:
        return None
    by_norm = {_norm(i): i for i in directions} | {_norm(n): i for i, n in directions.items() if n}
    if t in by_norm:
        return by_norm[t]
    starts = {i for k, i in by_norm.items() if t.startswith(k + "_") or k.startswith(t + "_")}
    if len(starts) == 1:
        return starts.pop()
    found = {i for k, i in by_norm.items() if re.search(rf"(^|_){re.escape(k)}(_|$)", t)}
    return found.pop() if len(found) == 1 else None


def _match_strategies(text: str, strategies: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Known strategy ids named in ``text`` (by id or title, any case), in order, and the leftover names."""
    if _norm(text) in {_norm(x) for x in _NONE} or text.strip().lower() in _NONE:
        return (), ()
    found: list[tuple[int, str]] = []
    low = text.lower()
    for sid, title in strategies.items():
        m = re.search(rf"(?<![a-z0-9_.-]){re.escape(sid.lower())}(?![a-z0-9_-])", low)
        if m is None and title:
            m = re.search(rf"(?<![a-z0-9]){re.escape(title.lower())}(?![a-z0-9])", low)
        if m is not None:
            found.append((m.start(), sid))
    ids = tuple(sid for _, sid in sorted(found))
    rest = low
    for sid in ids:
        rest = rest.replace(sid.lower(), " ").replace((strategies.get(sid) or "\0").lower(), " ")
    unknown = tuple(t for t in (x.strip(" `*'\"[]().") for x in re.split(r"[,;+|]|\band\b", rest))
                    if t and t not in _NONE)
    return ids, unknown


def parse_declaration(reply: str, directions: dict[str, str], strategies: dict[str, str]) -> Declaration | None:
    """The last ``APPLIED:`` line of a reply, parsed leniently (None when there is none).

    Accepted forms include ``APPLIED: direction=memory_access; strategies=ma_vectorized_loads, bc_tail_masking``,
    ``**Applied**: Memory access (ma_vectorized_loads)``, ``# APPLIED: {"direction": "...", "strategies": [...]}``,
    a direction by its name ("Parallel mapping"), strategies by id or title, ``strategies=none``. ``directions``
    and ``strategies`` map known ids to names/titles; names that match nothing are kept in ``unknown``."""
    text = strip_reasoning(reply or "")
    lines = list(_DECL_LINE.finditer(text))
    if not lines:
        return None
    body = lines[-1].group("body").strip().strip("*_`").strip()
    raw = lines[-1].group(0).strip()
    d_text, s_text = "", ""
    if body.startswith("{"):
        import json

        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            d_text = str(obj.get("direction") or "")
            st = obj.get("strategies") or []
            s_text = ", ".join(map(str, st)) if isinstance(st, list) else str(st)
            body = ""
    if body:
        dm, sm = _DIR_KEY.search(body), _STRAT_KEY.search(body)
        if dm and sm:
            if dm.start() < sm.start():
                d_text, s_text = body[dm.end():sm.start()], body[sm.end():]
            else:
                s_text, d_text = body[sm.end():dm.start()], body[dm.end():]
        elif sm:
            d_text, s_text = body[:sm.start()], body[sm.end():]
        elif dm:
            d_text, s_text = body[dm.end():], ""
            paren = re.search(r"\((.*)\)", d_text)
            if paren:
                d_text, s_text = d_text[:paren.start()], paren.group(1)
        else:  # "Memory access (ma_x, ma_y)" or "memory_access; ma_x, ma_y"
            paren = re.search(r"\((.*)\)", body)
            if paren:
                d_text, s_text = body[:paren.start()], paren.group(1)
            else:
                sep = re.search(r"[;|:]|\s[-–]\s", body)
                d_text, s_text = (body[:sep.start()], body[sep.end():]) if sep else (body, "")
    d_text = d_text.strip(" ;,|.`*'\"")
    s_text = s_text.strip(" ;|.`*'\"")
    direction = _match_direction(d_text, directions)
    ids, unknown = _match_strategies(s_text, strategies)
    if direction is None and not ids:  # maybe the strategies were listed without a key, after the direction
        ids, unknown = _match_strategies(body, strategies)
        direction = direction or _match_direction(d_text.split(",")[0], directions)
    return Declaration(direction, ids, raw, unknown)


__all__ = ["Block", "Declaration", "Extraction", "extract_code", "fenced_blocks", "parse_declaration",
           "strip_reasoning"]
