"""What every stage emitter shares: the flattened expressions of a stage and the context an emitter fills from.

`Emit` flattens a stage's input and epilogue expressions into tensor and scalar slots, a runtime shape program
and broadcast edges, and writes them as C; `StageCtx` carries one stage's program, knobs and those pieces to
the kind's emitter (stages/<kind>.py), which fills its templates (templates/<kind>.cu.tmpl, <kind>.cpp.tmpl).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..common import Knobs
from ..ops import c_expr, c_literal
from ..program import E, Program, Stage
from ..templating import fill, raw

# OP codes of the shared C state machine (templates/common.c.tmpl)
RED_OPS = {"sum": 0, "mean": 1, "max": 2, "min": 3, "prod": 4, "argmax": 5, "argmin": 6, "lse": 7, "meanvar": 8}
# the pool launcher's integer arguments, in the kernels' order
POOL_INTS = ("ID", "IH", "IW", "OD", "OH", "OW", "KD", "KH", "KW", "SD", "SH", "SW", "PD", "PH", "PW",
             "DD", "DH", "DW", "OWm", "OWs", "OHm", "OHs", "ODm", "ODs")


class Emit:
    """Flattens a stage's expressions: tensor and scalar slots, the runtime shape program, broadcast edges."""

    def __init__(self, program: Program, dialect: str) -> None:
        self.program = program
        self.dialect = dialect
        self.tslots: list[int] = []  # tensor ids
        self.sslots: list[str] = []  # scalar Python expressions
        self.nodes: list[tuple[str, list[int], Any]] = []  # runtime shape program
        self.edges: list[tuple[int, int, list[list[int]]]] = []  # (parent node, child node, runs of dims)

    def tslot(self, tid: int) -> int:
        if tid not in self.tslots:
            self.tslots.append(tid)
        return self.tslots.index(tid)

    def sslot(self, expr: str) -> int:
        if expr not in self.sslots:
            self.sslots.append(expr)
        return self.sslots.index(expr)

    def flatten(self, e: E) -> int:
        """Node id of `e` in the shape program (children first)."""
        if e.kind == "leaf":
            self.nodes.append(("leaf", [], self.tslot(e.val)))
        elif e.kind == "self":
            self.nodes.append(("self", [], None))
        elif e.kind in ("lit", "sc"):
            if e.kind == "sc":
                self.sslot(e.val)
            self.nodes.append(("const", [], None))
        elif e.kind == "view":
            kid = self.flatten(e.args[0])
            self.nodes.append(("view", [kid], e.val))
        else:
            kids = [self.flatten(a) for a in e.args]
            self.nodes.append(("op", kids, None))
            me = len(self.nodes) - 1
            for a, k in zip(e.args, kids, strict=True):
                if a.kind in ("lit", "sc") or tuple(a.shape or ()) == tuple(e.shape or ()):
                    continue
                self.edges.append((me, k, _runs(tuple(a.shape or ()), tuple(e.shape or ()))))
            return me
        return len(self.nodes) - 1

    def code(self, e: E, root: int, idx: str, lines: list[str]) -> str:
        """C statements (appended) and the C expression of `e` at flat index `idx` (its node id is `root`)."""
        def go(node: E, nid: int, ix: str) -> str:
            if node.kind == "leaf":
                return f"LD(P{self.tslots.index(node.val)}, {ix})"
            if node.kind == "self":
                return "v"
            if node.kind == "lit":
                return c_literal(node.val)
            if node.kind == "sc":
                return f"S{self.sslots.index(node.val)}"
            kid_ids = self.nodes[nid][1]
            if node.kind == "view":
                return go(node.args[0], kid_ids[0], ix)
            args = []
            for a, k in zip(node.args, kid_ids, strict=True):
                edge = next((n for n, ed in enumerate(self.edges) if ed[0] == nid and ed[1] == k), None)
                cix = ix
                if edge is not None:
                    runs = self.edges[edge][2]
                    cix = f"j{edge}"
                    terms = []
                    for r in range(len(runs)):
                        b = f"B{edge}_{r}"
                        lines.append(f"        const unsigned int {cix}q{r} = fdiv((unsigned int)({ix}), (unsigned int){b}dm, {b}ds);")
                        terms.append(f"(long long)(({cix}q{r} - fdiv({cix}q{r}, (unsigned int){b}mm, {b}ms) * (unsigned int){b}m) "
                                     f"* (unsigned int){b}u)")
                    lines.append(f"        const long long {cix} = {' + '.join(terms) if terms else '0'};")
                args.append(go(a, k, cix))
            var = f"e{len(lines)}_{nid}"
            lines.append(f"        const float {var} = {c_expr(node.op, args, self.dialect)};")
            return var

        return go(e, root, idx)

    def edge_params(self) -> list[str]:
        return [f"int B{e}_{r}{c}" for e, ed in enumerate(self.edges) for r in range(len(ed[2])) for c in EDGE_FIELDS]


# per run of kept dims: magic/shift of its divisor, its size with magic/shift, the child's inner size
EDGE_FIELDS = ("dm", "ds", "m", "mm", "ms", "u")


def _runs(child: tuple[int, ...], parent: tuple[int, ...]) -> list[list[int]]:
    """Runs of consecutive parent dims the child varies along (its other dims broadcast)."""
    pad = (1,) * (len(parent) - len(child)) + child
    runs: list[list[int]] = []
    for d in range(len(parent)):
        if pad[d] == parent[d] and pad[d] != 1:
            if runs and runs[-1][-1] == d - 1:
                runs[-1].append(d)
            else:
                runs.append([d])
    return runs



def params(em: Emit, with_edges: bool = True) -> list[str]:
    tps = []
    for n, tid in enumerate(em.tslots):
        ctype = {"float": "float", "long": "long long", "bool": "bool"}[em.program.tensors[tid].dtype]
        tps.append(f"const {ctype}* __restrict__ P{n}")
    return tps + [f"double S{j}_in" for j in range(len(em.sslots))] + (em.edge_params() if with_edges else [])


def scalars(em: Emit) -> list[str]:
    return [f"    const float S{j} = (float)S{j}_in;" for j in range(len(em.sslots))]


def lambdas(em: Emit, stage: Stage, roots: dict[str, int]) -> list[str]:
    """IN(i): the input expression at flat input index i; POST(i, v): the epilogue at flat output index i."""
    out = []
    lines: list[str] = []
    val = em.code(stage.inp, roots["inp"], "i", lines)
    out += ["    auto IN = [&](long long i) -> float {", *lines, f"        return {val};", "    };"]
    if stage.post is not None:
        lines = []
        val = em.code(stage.post, roots["post"], "i", lines)
        out += ["    auto POST = [&](long long i, float v) -> float {", *lines, f"        return {val};", "    };"]
    else:
        out += ["    auto POST = [&](long long i, float v) -> float { (void)i; return v; };"]
    return out


def prepare_stage(program: Program, stage: Stage, dialect: str) -> tuple[Emit, dict[str, int]]:
    em = Emit(program, dialect)
    roots = {"inp": em.flatten(stage.inp)}
    inp_nodes = len(em.nodes)
    if stage.post is not None:
        roots["post"] = em.flatten(stage.post)
    roots["_inp_nodes"] = inp_nodes
    return em, roots



@dataclass
class StageCtx:
    """One stage being emitted: the program, the stage and its index, the knobs, and its flattened expressions."""

    program: Program
    stage: Stage
    k: int
    knobs: Knobs
    em: Emit
    roots: dict[str, int]

    @property
    def scalars(self) -> str:
        return "\n".join(scalars(self.em))

    @property
    def lambdas(self) -> str:
        return "\n".join(lambdas(self.em, self.stage, self.roots))

    @property
    def params(self) -> list[str]:
        return params(self.em)

    @property
    def out_t(self) -> str:
        return "long long" if self.stage.out_dtype == "long" else "float"

    def cuda_head(self) -> str:
        """The defines every CUDA stage source starts with (threads per block, exp/log of the chosen math)."""
        fast = self.knobs.get("fast_math", False)
        return (f"#define NT {self.knobs['block']}\n{raw('cuda_head.cu.tmpl')}#define EXPF {'__expf' if fast else 'expf'}\n"
                f"#define LOGF {'__logf' if fast else 'logf'}\n")

    def cuda_stateful_head(self, op: int) -> str:
        """The head of a reduce/norm/scan source: the OP code, the G placeholder, the shared state machine."""
        return self.cuda_head() + f"#define OP {op}\n" + "{G_DEFINE}" + raw("common.c.tmpl") + raw("cuda_group.cu.tmpl")


def pool_window(is_max: bool) -> str:
    """The pooling window loop shared by CUDA and C++ (templates/pool_window.c.tmpl)."""
    return fill("pool_window.c.tmpl", init="F_NEG_INF" if is_max else "0.0f",
                acc="if (x > acc) acc = x;" if is_max else "acc += x;", fin="acc" if is_max else "acc / (float)cnt")


def reduce_fin(kind: str, indent: str, **values: Any) -> str:
    """How a reduce stage stores its result (templates/reduce_fin.c.tmpl), indented for the caller's loop."""
    return "\n".join(indent + ln if ln else ln for ln in fill("reduce_fin.c.tmpl", kind, **values).split("\n"))


__all__ = ["EDGE_FIELDS", "Emit", "POOL_INTS", "RED_OPS", "StageCtx", "E", "params", "pool_window", "prepare_stage",
           "reduce_fin", "scalars", "lambdas"]


def layout_lines(stage: Stage) -> list[str]:
    """Launcher lines computing K (outputs or rows), R (reduced length) and K2 (inner stride) from the input
    shape: form A reduces adjacent dims, form B is BatchNorm's (all but dim 1), form G GroupNorm's groups."""
    if stage.params.get("form") == "G":
        return ["    groups = int(P[0])",
                "    K, R, K2 = xshape[0] * groups, math.prod(xshape) // max(xshape[0] * groups, 1), 1",
                "    if xshape[1] % groups:", "        raise ValueError('channels not divisible by groups')"]
    if stage.params.get("form") == "B":
        return ["    rank = len(xshape)", "    K, K2 = xshape[1], math.prod(xshape[2:])", "    R = xshape[0] * K2"]
    return ["    dims = _dims(P[0], len(xshape))", "    K, R, K2 = _layout(xshape, dims)"]


def group_lines(kind: str, knobs: Knobs) -> list[str]:
    """Launcher lines choosing g, the threads that share one output or row: 1, a warp or the block."""
    nt = knobs["block"]
    mapping = knobs.get("mapping", "auto")
    lines = ["    sms = _sms(dev)"]
    if mapping == "auto":
        lines += ["    if K2 > 1 and K >= sms * 64:", "        g = 1",
                  "    elif R <= 1024 or K >= sms * 64:", "        g = 32", "    else:", f"        g = {nt}"]
        if kind == "scan":
            lines = ["    sms = _sms(dev)", f"    g = 1 if K2 > 1 or K >= sms * {nt} else {nt}"]
    else:
        g = {"thread": "1", "warp": "32", "block": str(nt)}[mapping]
        if kind == "scan" and mapping == "warp":
            g = "1"
        lines += [f"    g = {g}"]
    return lines
