"""Elementwise chains fused into one kernel, alone or as the epilogue of a Linear/convolution kept in PyTorch.

Operands are `full` (the output's shape, read at the flat index) or broadcast along one axis (read at
`(i / inner) % size`, inner and size taken from the output's runtime shape), so any shape works, tails
included. Knobs: vector width, block size, grid-stride vs one-thread-per-unit, fast math, read-only and
streaming cache hints, and whether the producer's bias is added by PyTorch or in our epilogue; on cpp, the
launch knobs of cpp_launch.py (threads, schedule, simd, block: one build serves them) and -march=native.
"""

from __future__ import annotations

from typing import Any

from .. import cpp_launch
from ..common import MAX_VARIANTS, NEXT, Knobs, Variants, ext_name, frame, prefix_lines
from ..ops import c_function, tl_body
from ..spec import Chain, Operand, Pattern
from ..templating import raw

FAMILY = "elementwise"


def space(pattern: Pattern, backend: str) -> dict[str, tuple[Any, ...]]:
    s: dict[str, tuple[Any, ...]]
    if backend == "cuda":
        s = {"vec": (1, 4), "block": (256, 128, 512, 1024), "grid": ("flat", "stride"), "fast_math": (False, True),
             "ldg": (False, True), "stream": (False, True)}
    elif backend == "triton":
        s = {"vec": (1, 4), "block": (1024, 2048, 4096), "warps": (4, 8), "grid": ("flat", "stride"),
             "fast_math": (False, True), "stream": (False, True)}
    else:
        s = {"vec": (1, 8), "block": (0, 4096), **cpp_launch.launch_space(), "march": ("generic", "native")}
    if pattern.prefix is not None and pattern.prefix.has_bias:
        s["bias"] = ("gemm", "epilogue")
    return s


def default(pattern: Pattern, backend: str) -> Knobs:
    """The plain starting point: scalar accesses, one thread per element, bias left in the GEMM."""
    return {k: v[0] for k, v in space(pattern, backend).items()}


def safe(pattern: Pattern, backend: str) -> Knobs:
    return default(pattern, backend)


def moves(backend: str) -> dict[str, Knobs]:
    """Strategy id -> knob move (see memory/seed/strategies_*.json)."""
    wide = 8 if backend == "cpp" else 4
    m: dict[str, Knobs] = {
        "ma_vectorized_loads": {"vec": wide},
        "ma_readonly_cache": {"ldg": True},
        "ma_streaming_stores": {"stream": True},
        "pm_grid_stride_loop": {"grid": "stride"},
        "lo_persistent_kernel": {"grid": "stride"},
        "oc_thread_coarsening": {"grid": "stride", "vec": wide},
        "oc_wave_quantization": {"grid": "stride"},
        "oc_block_size": {"block": NEXT},
        "oc_autotune_dispatch": {"block": NEXT, "warps": NEXT},
        "oc_launch_bounds_registers": {"block": NEXT},
        "it_fast_math_intrinsics": {"fast_math": True, "march": "native"},
        "it_strength_reduction": {"vec": wide},
        "fr_epilogue_fusion": {"bias": "epilogue"},
        "fr_elementwise_chain_fusion": {"bias": "epilogue"},
        "lo_horizontal_fusion": {"bias": "epilogue"},
    }
    return m


DIRECTION_MOVES: dict[str, Knobs] = {
    "memory_access": {"vec": NEXT},
    "parallel_mapping": {"grid": NEXT},
    "occupancy_tuning": {"block": NEXT},
    "instruction_throughput": {"fast_math": NEXT, "march": NEXT},
    "fusion_restructuring": {"bias": NEXT},
    "launch_overhead": {"grid": NEXT},
    "data_reuse": {"block": NEXT},
}


def curated(pattern: Pattern, backend: str) -> list[Knobs]:
    """The enumerable candidate set: the default, then single and combined knob changes (at most MAX_VARIANTS)."""
    base = default(pattern, backend)
    sp = space(pattern, backend)
    variants = Variants(base, sp)
    add, out = variants.add, variants.items

    wide = sp["vec"][-1]
    bias = {"bias": "epilogue"} if "bias" in sp else {}
    for blk in sp["block"]:
        add(vec=wide, block=blk, **bias)
    add(vec=wide, grid="stride", **bias)
    add(**bias)
    add(vec=wide)
    if backend == "cuda":
        add(vec=wide, ldg=True, **bias)
        add(vec=wide, stream=True, **bias)
        add(vec=wide, fast_math=True, **bias)
        add(vec=wide, ldg=True, stream=True, fast_math=True, **bias)
        add(vec=wide, block=512, grid="stride", fast_math=True, **bias)
    elif backend == "triton":
        add(vec=wide, warps=8, **bias)
        add(vec=wide, block=4096, warps=8, **bias)
        add(vec=wide, stream=True, **bias)
        add(vec=wide, fast_math=True, **bias)
        add(vec=wide, grid="stride", warps=8, **bias)
    else:
        return cpp_launch.curated(base, sp, ("vec", "march", "block", "bias"))
    return out[:MAX_VARIANTS]


def _chain(pattern: Pattern, knobs: Knobs) -> tuple[Chain, bool]:
    """The chain to compute and whether the producer's bias stays in PyTorch."""
    assert pattern.chain is not None
    chain = pattern.chain
    pre = pattern.prefix
    if pre is not None and pre.has_bias and knobs.get("bias") == "epilogue":
        chain = chain.with_leading_add(Operand(f"self.{pre.module}.bias", "axis", pre.bias_axis))
        return chain, False
    return chain, pre is not None


def _axes(chain: Chain) -> str:
    return repr(tuple(None if o.kind == "full" else o.axis for o in chain.operands))


_PY_SHAPES = '''
def _operands(tensors, device_check):
    """Contiguous flat operands, the output, and (inner, size) of each broadcast operand, from runtime shapes."""
    ref = tensors[_FULL]
    out = torch.empty(ref.shape, device=ref.device, dtype=torch.float32)
    flat, dims, period = [], [], 1
    for t, axis in zip(tensors, _AXES):
        if not (device_check(t) and t.dtype == torch.float32):
            raise ValueError("every operand must be a float32 tensor on the kernel's device")
        if axis is None:
            if t.shape != out.shape:
                raise ValueError(f"operand of shape {tuple(t.shape)} where {tuple(out.shape)} was expected")
        else:
            if out.dim() < -axis:
                raise ValueError(f"output of rank {out.dim()} has no axis {axis}")
            size, inner = out.shape[axis], math.prod(out.shape[axis + 1:]) if axis != -1 else 1
            if t.numel() != size:
                raise ValueError(f"broadcast operand has {t.numel()} elements, expected {size}")
            dims += [inner, size]
            period = max(period, inner * size)
        flat.append(t.contiguous().view(-1))
    return out, flat, dims, period
'''


def _cuda(pattern: Pattern, knobs: Knobs) -> str:
    chain, bias_in_gemm = _chain(pattern, knobs)
    ops = chain.operands
    fast, vec, ldg, stream = knobs["fast_math"], knobs["vec"], knobs["ldg"], knobs["stream"]
    fn = c_function(chain, "cuda_fast" if fast else "cuda", "ew_op", "__device__ __forceinline__")
    ld = (lambda p: f"__ldg({p})") if ldg else (lambda p: f"*({p})")
    params = ["float* __restrict__ out"] + [f"const float* __restrict__ p{i}" for i in range(len(ops))]
    params += [f"double s{j}_in" for j in range(len(chain.scalars))] + ["int n"]
    params += [f"int in{i}, int sz{i}" for i, o in enumerate(ops) if o.kind == "axis"]
    lines = [f"    const float s{j} = (float)s{j}_in;" for j in range(len(chain.scalars))]

    def elem(idx: str, i: int) -> str:
        o = ops[i]
        return ld(f"p{i} + {idx}") if o.kind == "full" else ld(f"p{i} + ({idx} / in{i}) % sz{i}")

    scal = [f"s{j}" for j in range(len(chain.scalars))]

    def call(idx: str) -> str:
        return f"ew_op({', '.join([elem(idx, i) for i in range(len(ops))] + scal)})"

    store = (lambda p, v: f"__stcs({p}, {v});") if stream else (lambda p, v: f"*({p}) = {v};")
    if vec == 1:
        body = f"        {store('out + i', call('i'))}"
        units = "n"
    else:
        full = [i for i, o in enumerate(ops) if o.kind == "full"]
        align = " | ".join(["(unsigned long long)out"] + [f"(unsigned long long)p{i}" for i in full])
        loads = []
        for i, o in enumerate(ops):
            if o.kind == "full":
                loads.append(f"            const float4 x{i} = {ld(f'reinterpret_cast<const float4*>(p{i}) + g')};")
        lanes = []
        for e, comp in enumerate("xyzw"):
            args = []
            for i, o in enumerate(ops):
                args.append(f"x{i}.{comp}" if o.kind == "full" else ld(f"p{i} + ((base + {e}) / in{i}) % sz{i}"))
            lanes.append(f"            r.{comp} = ew_op({', '.join(args + scal)});")
        body = "\n".join([
            "        const long long base = g * 4;",
            "        if (aligned && base + 4 <= n) {",
            *loads, "            float4 r;", *lanes,
            f"            {store('reinterpret_cast<float4*>(out) + g', 'r')}",
            "        } else {",
            "            for (long long i = base; i < n && i < base + 4; ++i) "
            + store("out + i", call("i")),
            "        }",
        ])
        lines.append(f"    const bool aligned = (({align}) & 15ull) == 0;")
        units = "((long long)n + 3) / 4"
    var = "i" if vec == 1 else "g"
    if knobs["grid"] == "stride":
        loop = (f"    for (long long {var} = (long long)blockIdx.x * BLOCK + threadIdx.x; {var} < {units}; "
                f"{var} += (long long)gridDim.x * BLOCK) {{")
        lines += [loop, body, "    }"]
    else:
        lines += [f"    const long long {var} = (long long)blockIdx.x * BLOCK + threadIdx.x;",
                  f"    if ({var} < {units}) {{", body, "    }"]
    source = (f"#define BLOCK {knobs['block']}\n{fn}\n"
              f'extern "C" __global__ void __launch_bounds__(BLOCK) ew_fused({", ".join(params)}) {{\n'
              + "\n".join(lines) + "\n}\n")
    full_idx = next(i for i, o in enumerate(ops) if o.kind == "full")
    body_py = f'''_SOURCE = r"""
{source}"""

{cpp_launch.cfg_line(knobs)}
_AXES = {_axes(chain)}  # per operand: None = the output's shape, else the one axis it varies along
_FULL = {full_idx}
_BLOCK = {knobs['block']}
_VEC = {vec}
_STRIDE_GRID = {knobs['grid'] == 'stride'}
_KERNEL = None
_SMS = {{}}
{_PY_SHAPES}

def _kernel():
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = torch.cuda._compile_kernel(_SOURCE, "ew_fused")
    return _KERNEL


def _fused(tensors, scalars):
    out, flat, dims, period = _operands(tensors, lambda t: t.is_cuda)
    n = out.numel()
    if n == 0:
        return out
    # NVRTC kernels take 32-bit ints: cut huge tensors into chunks that start on a broadcast period
    unit = math.lcm(period, 4)
    step = n if n < 2**31 - 4 else (2**30 // unit) * unit
    if step == 0:
        raise ValueError("broadcast period too large for 32-bit chunks")
    out_flat = out.view(-1)
    kernel = _kernel()
    if out.device.index not in _SMS:
        _SMS[out.device.index] = torch.cuda.get_device_properties(out.device).multi_processor_count
    for start in range(0, n, step):
        count = min(step, n - start)
        ins = [f[start:start + count] if axis is None else f for f, axis in zip(flat, _AXES)]
        blocks = ((count + _VEC - 1) // _VEC + _BLOCK - 1) // _BLOCK
        if _STRIDE_GRID:
            blocks = min(blocks, _SMS[out.device.index] * 8)
        kernel(grid=(blocks, 1, 1), block=(_BLOCK, 1, 1),
               args=[out_flat[start:start + count], *ins, *[float(s) for s in scalars], count, *dims])
    return out
'''
    summary = (f"A plain CUDA kernel compiled by NVRTC (torch.cuda._compile_kernel) computes the fused chain, "
               f"{'float4' if vec == 4 else 'scalar'} accesses, {knobs['block']} threads per block, "
               f"{'grid-stride loop' if knobs['grid'] == 'stride' else 'one thread per unit'}.")
    return frame(pattern, "cuda", FAMILY, knobs, summary, body_py, _forward(pattern, chain, bias_in_gemm),
                 "import math")


def _forward(pattern: Pattern, chain: Chain, bias_in_gemm: bool) -> str:
    lines = prefix_lines(pattern, bias_in_gemm)
    tensors = ", ".join(o.expr for o in chain.operands)
    scalars = ", ".join(chain.scalars)
    lines.append(f"        return _fused([{tensors}], [{scalars}])")
    return "\n".join(lines)


def _triton(pattern: Pattern, knobs: Knobs) -> str:
    chain, bias_in_gemm = _chain(pattern, knobs)
    ops = chain.operands
    params = ["out_ptr"] + [f"p{i}" for i in range(len(ops))] + [f"s{j}" for j in range(len(chain.scalars))]
    params += ["n"] + [f"in{i}, sz{i}" for i, o in enumerate(ops) if o.kind == "axis"] + ["BLOCK: tl.constexpr"]
    ev = ', eviction_policy="evict_first"' if knobs["stream"] else ""
    ind = "        " if knobs["grid"] == "stride" else "    "
    body = []
    if knobs["vec"] > 1:
        body.append(f"{ind}offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)")
    body.append(f"{ind}mask = offs < n")
    for i, o in enumerate(ops):
        idx = "offs" if o.kind == "full" else f"(offs // in{i}) % sz{i}"
        hint = ev if o.kind == "full" else ""
        body.append(f"{ind}a{i} = tl.load(p{i} + {idx}, mask=mask, other=0.0{hint})")
    lines, result = tl_body(chain, knobs["fast_math"], ind)
    body += lines
    body.append(f"{ind}tl.store(out_ptr + offs, {result}, mask=mask{ev})")
    if knobs["grid"] == "stride":
        head = ["    pid = tl.program_id(0).to(tl.int64)", "    nprog = tl.num_programs(0).to(tl.int64)",
                "    for start in range(pid * BLOCK, n, nprog * BLOCK):",
                "        offs = start + tl.arange(0, BLOCK)"]
    else:
        head = ["    pid = tl.program_id(0).to(tl.int64)", "    offs = pid * BLOCK + tl.arange(0, BLOCK)"]
    kernel = "@triton.jit\ndef _ew_kernel(" + ", ".join(params) + "):\n" + "\n".join(head + body) + "\n"
    full_idx = next(i for i, o in enumerate(ops) if o.kind == "full")
    grid = ("min(triton.cdiv(n, _BLOCK), _SMS[out.device.index] * 4)" if knobs["grid"] == "stride"
            else "triton.cdiv(n, _BLOCK)")
    body_py = f'''{kernel}

{cpp_launch.cfg_line(knobs)}
_AXES = {_axes(chain)}  # per operand: None = the output's shape, else the one axis it varies along
_FULL = {full_idx}
_BLOCK = {knobs['block']}
_WARPS = {knobs['warps']}
_SMS = {{}}
{_PY_SHAPES}

def _fused(tensors, scalars):
    out, flat, dims, _ = _operands(tensors, lambda t: t.device == tensors[_FULL].device)
    n = out.numel()
    if n == 0:
        return out
    if out.device.index not in _SMS:
        _SMS[out.device.index] = (torch.cuda.get_device_properties(out.device).multi_processor_count
                                  if out.is_cuda else 4)
    grid = ({grid},)
    _ew_kernel[grid](out, *flat, *[float(s) for s in scalars], n, *dims, BLOCK=_BLOCK, num_warps=_WARPS)
    return out
'''
    summary = (f"A Triton kernel computes the fused chain over {knobs['block']}-element blocks "
               f"({'grid-stride' if knobs['grid'] == 'stride' else 'one program per block'}, masked tail).")
    return frame(pattern, "triton", FAMILY, knobs, summary, body_py, _forward(pattern, chain, bias_in_gemm),
                 "import math\n\nimport triton\nimport triton.language as tl")


def _cpp(pattern: Pattern, knobs: Knobs) -> str:
    chain, bias_in_gemm = _chain(pattern, knobs)
    ops = chain.operands
    fn = c_function(chain, "cpp", "ew_op", "static inline")
    params = ["torch::Tensor out"] + [f"torch::Tensor t{i}" for i in range(len(ops))]
    params += [f"double s{j}_in" for j in range(len(chain.scalars))]
    params += [f"int64_t in{i}, int64_t sz{i}" for i, o in enumerate(ops) if o.kind == "axis"]
    params += ["std::vector<int64_t> C"]
    checks = "\n".join(
        f'    TORCH_CHECK(t{i}.device().is_cpu() && t{i}.scalar_type() == torch::kFloat32 && t{i}.is_contiguous(), '
        f'"operand {i} must be a contiguous float32 CPU tensor");' for i in range(len(ops)))
    ptrs = "\n".join(f"    const float* __restrict__ p{i} = t{i}.data_ptr<float>();" for i in range(len(ops)))
    scal = "\n".join(f"    const float s{j} = (float)s{j}_in;" for j in range(len(chain.scalars)))
    args = [f"p{i}[i]" if o.kind == "full" else f"p{i}[(i / in{i}) % sz{i}]" for i, o in enumerate(ops)]
    args += [f"s{j}" for j in range(len(chain.scalars))]
    simd = knobs["vec"] > 1
    stmt = f"o[i] = ew_op({', '.join(args)});"
    # the launch knobs (threads, schedule, simd, block) are read from _CFG at call time: one build serves them all
    loop = f"""    const Cfg CF = cfg_of(C, CF_WORK(n));
    if (CF.blk > 0) {{
        const int64_t nb = (n + CF.blk - 1) / CF.blk;
        PAR_FOR
        for (int64_t b = 0; b < nb; ++b) {{
            const int64_t e = std::min(n, (b + 1) * CF.blk);
            if (CF.simd) {{
                _Pragma("omp simd")
                for (int64_t i = b * CF.blk; i < e; ++i) {stmt}
            }} else {{
                for (int64_t i = b * CF.blk; i < e; ++i) {stmt}
            }}
        }}
    }} else if (CF.simd) {{
        _Pragma("omp parallel for simd num_threads(CF.nth) schedule(runtime)")
        for (int64_t i = 0; i < n; ++i) {stmt}
    }} else {{
        PAR_FOR
        for (int64_t i = 0; i < n; ++i) {stmt}
    }}"""
    source = f"""#include <torch/extension.h>
#include <algorithm>
#include <cmath>
#include <vector>
{raw("cpp_cfg.cpp.tmpl")}
#define CF_WORK(n) (C[5] > 0 ? ((n) + C[5] - 1) / C[5] : (n))

{fn}
void ew_forward({', '.join(params)}) {{
    TORCH_CHECK(out.is_contiguous() && out.scalar_type() == torch::kFloat32, "out must be contiguous float32");
{checks}
    const int64_t n = out.numel();
    float* __restrict__ o = out.data_ptr<float>();
{ptrs}
{scal}
{loop}
}}
"""
    flags = ["-O3", "-fopenmp"] + (["-march=native"] if knobs["march"] == "native" else [])
    full_idx = next(i for i, o in enumerate(ops) if o.kind == "full")
    body_py = f'''_CPP_SOURCE = r"""
{source}"""

_ext = load_inline(
    name="{ext_name('htam_ex_ew', source + repr(flags))}",
    cpp_sources=_CPP_SOURCE,
    functions=["ew_forward"],
    extra_cflags={flags!r},
    extra_ldflags=["-fopenmp"],
)

{cpp_launch.cfg_line(knobs)}
_AXES = {_axes(chain)}  # per operand: None = the output's shape, else the one axis it varies along
_FULL = {full_idx}
{_PY_SHAPES}

def _fused(tensors, scalars):
    out, flat, dims, _ = _operands(tensors, lambda t: t.device.type == "cpu")
    if out.numel():
        _ext.ew_forward(out, *flat, *[float(s) for s in scalars], *dims, _CFG)
    return out
'''
    summary = (f"An OpenMP C++ loop (load_inline) computes the fused chain in one pass"
               f"{' with omp simd' if simd else ''}{', in blocks of ' + str(knobs['block']) if knobs['block'] else ''}"
               f"{', one thread' if knobs.get('threads') == 'one' else ''}"
               f"{', ' + knobs['sched'] + ' schedule' if knobs.get('sched', 'static') != 'static' else ''}.")
    return frame(pattern, "cpp", FAMILY, knobs, summary, body_py, _forward(pattern, chain, bias_in_gemm),
                 "import math\n\nfrom torch.utils.cpp_extension import load_inline")


def render(pattern: Pattern, backend: str, knobs: Knobs) -> str:
    return {"cuda": _cuda, "triton": _triton, "cpp": _cpp}[backend](pattern, knobs)
