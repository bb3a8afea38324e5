"""Argmax over the module's dim (KernelBench level 1, problem 51): hand-written NVRTC kernels.

kernelbench: level1/51_Argmax_over_a_dimension.py
expect: accepted

int64 index of the largest value over `dim` with torch's rules: the first index among equal maxima, and a
NaN counts as the maximum (its first index wins). The input is seen as (outer, d, inner) around `dim`. For the
problem's (b, d1, d2) input reduced over dim 1, one thread owns an output and walks its d values with stride
inner (coalesced across threads), keeping the first best. When inner is 1 one block owns a row: per-thread
bests, then a block reduction of (value, index) pairs that prefers the smaller index on ties. Sizes that can
pass 2**31 arrive as doubles.

Fast-form rewrite of tests/cheats/kernelbench/honest/l1_51_argmax_over_a_dimension.py
(htam_agent.coder.exemplar.fast_cuda.to_fast_form): the same kernels, built by nvcc without torch headers and
launched through the fast CUDA launcher.
"""

import math

import torch
import torch.nn as nn

# ---- fast CUDA launcher (copy unchanged): nvcc builds the kernels without torch headers in seconds, and a
# launch costs a few microseconds. _fast_kernel(SOURCE, "name") returns kernel(grid=, block=, args=[...],
# shared_mem=0); each argument is packed by the type the kernel declares: T* (a CUDA tensor), int, unsigned,
# long long, int64_t, size_t, float, double, bool. Launches go to torch's current CUDA stream.
_FAST_GLUE = r"""
#include <Python.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <string.h>

struct FastKernel { const char* name; const void* fn; const char* params; };
extern "C" const FastKernel FAST_KERNELS[];

static PyObject* g_stream_fn;  // torch._C._cuda_getCurrentRawStream, resolved at the first launch
static PyObject* g_device_fn;  // torch._C._cuda_getDevice
static PyObject* g_data_ptr;
static PyObject* g_is_cuda;
static size_t g_shared_set[64];

static int fast_dims(PyObject* o, const char* what, const char* kname, dim3* out) {
    unsigned long v[3] = {1, 1, 1};
    if (PyLong_Check(o)) {
        v[0] = PyLong_AsUnsignedLong(o);
    } else {
        PyObject* t = PySequence_Fast(o, "grid and block must be an int or a tuple of 1 to 3 ints");
        if (!t) return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(t);
        if (n < 1 || n > 3) {
            Py_DECREF(t);
            PyErr_Format(PyExc_ValueError, "%s: %s needs 1 to 3 sizes, got %zd", kname, what, n);
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; ++i) v[i] = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(t, i));
        Py_DECREF(t);
    }
    if (PyErr_Occurred()) return -1;
    *out = dim3((unsigned)v[0], (unsigned)v[1], (unsigned)v[2]);
    return 0;
}

static PyObject* fast_launch(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    const Py_ssize_t idx = PyLong_AsSsize_t(self);
    const FastKernel* k = &FAST_KERNELS[idx];
    const Py_ssize_t np = (Py_ssize_t)strlen(k->params);
    if (nargs != 3 + np)
        return PyErr_Format(PyExc_TypeError, "%s takes %zd kernel arguments (types %s), got %zd",
                            k->name, np, k->params, nargs - 3);
    dim3 grid, block;
    if (fast_dims(args[0], "grid", k->name, &grid) || fast_dims(args[1], "block", k->name, &block)) return NULL;
    const size_t shared = PyLong_AsSize_t(args[2]);
    if (PyErr_Occurred()) return NULL;
    union Slot { void* p; int i; long long l; float f; double d; } slots[48];
    void* ptrs[48];
    for (Py_ssize_t j = 0; j < np; ++j) {
        PyObject* a = args[3 + j];
        switch (k->params[j]) {
        case 'p': {
            PyObject* c = PyObject_GetAttr(a, g_is_cuda);
            const int ok = c ? PyObject_IsTrue(c) : -1;
            Py_XDECREF(c);
            if (ok != 1) {
                PyErr_Clear();
                return PyErr_Format(PyExc_TypeError, "%s: argument %zd is a pointer: pass a CUDA tensor",
                                    k->name, j);
            }
            PyObject* p = PyObject_CallMethodNoArgs(a, g_data_ptr);
            if (!p) return NULL;
            slots[j].p = PyLong_AsVoidPtr(p);
            Py_DECREF(p);
            break;
        }
        case 'i': {
            const long long v = PyLong_AsLongLong(a);
            if (!PyErr_Occurred() && (v < INT32_MIN || v > INT32_MAX))
                return PyErr_Format(PyExc_OverflowError,
                                    "%s: argument %zd (%lld) does not fit the kernel's 32-bit int: declare it "
                                    "long long", k->name, j, v);
            slots[j].i = (int)v;
            break;
        }
        case 'l': slots[j].l = PyLong_AsLongLong(a); break;
        case 'f': slots[j].f = (float)PyFloat_AsDouble(a); break;
        case 'd': slots[j].d = PyFloat_AsDouble(a); break;
        }
        if (PyErr_Occurred()) return NULL;
        ptrs[j] = &slots[j];
    }
    if (!g_stream_fn) {
        PyObject* tc = PyImport_ImportModule("torch._C");
        if (!tc) return NULL;
        g_stream_fn = PyObject_GetAttrString(tc, "_cuda_getCurrentRawStream");
        g_device_fn = g_stream_fn ? PyObject_GetAttrString(tc, "_cuda_getDevice") : NULL;
        Py_DECREF(tc);
        if (!g_device_fn) { Py_CLEAR(g_stream_fn); return NULL; }
    }
    PyObject* dev = PyObject_CallNoArgs(g_device_fn);
    if (!dev) return NULL;
    PyObject* s = PyObject_CallOneArg(g_stream_fn, dev);
    Py_DECREF(dev);
    if (!s) return NULL;
    cudaStream_t stream = (cudaStream_t)PyLong_AsVoidPtr(s);
    Py_DECREF(s);
    if (shared > 48 * 1024 && shared > g_shared_set[idx]) {
        cudaError_t e = cudaFuncSetAttribute(k->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared);
        if (e != cudaSuccess)
            return PyErr_Format(PyExc_RuntimeError, "%s: %zu bytes of shared memory: %s", k->name, shared,
                                cudaGetErrorString(e));
        g_shared_set[idx] = shared;
    }
    const cudaError_t err = cudaLaunchKernel(k->fn, grid, block, ptrs, shared, stream);
    if (err != cudaSuccess)
        return PyErr_Format(PyExc_RuntimeError, "%s: launch failed: %s", k->name, cudaGetErrorString(err));
    Py_RETURN_NONE;
}

static PyMethodDef g_defs[64];
static struct PyModuleDef g_module = {PyModuleDef_HEAD_INIT, "fast_kernels", NULL, -1, NULL};

#define FAST_CAT2(a, b) a##b
#define FAST_CAT(a, b) FAST_CAT2(a, b)
PyMODINIT_FUNC FAST_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) {
    g_data_ptr = PyUnicode_InternFromString("data_ptr");
    g_is_cuda = PyUnicode_InternFromString("is_cuda");
    PyObject* m = PyModule_Create(&g_module);
    if (!m) return NULL;
    for (Py_ssize_t i = 0; i < 64 && FAST_KERNELS[i].name; ++i) {
        g_defs[i].ml_name = FAST_KERNELS[i].name;
        g_defs[i].ml_meth = (PyCFunction)(void (*)(void))fast_launch;
        g_defs[i].ml_flags = METH_FASTCALL;
        PyObject* idx = PyLong_FromSsize_t(i);
        PyObject* f = idx ? PyCFunction_NewEx(&g_defs[i], idx, NULL) : NULL;
        Py_XDECREF(idx);
        if (!f || PyModule_AddObject(m, FAST_KERNELS[i].name, f) < 0) {
            Py_XDECREF(f);
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
"""

_FAST_TYPES = {
    "int": "i", "signed": "i", "signed int": "i", "unsigned": "i", "unsigned int": "i", "int32_t": "i",
    "uint32_t": "i", "bool": "i", "long long": "l", "long long int": "l", "unsigned long long": "l",
    "long": "l", "unsigned long": "l", "int64_t": "l", "uint64_t": "l", "size_t": "l", "ptrdiff_t": "l",
    "float": "f", "double": "d",
}
_FAST_MODULES = {}


def _fast_param(kernel, param):
    import re

    if "*" in param:
        return "p"
    words = [w for w in re.findall(r"\w+", param) if w not in ("const", "volatile", "__restrict__")]
    ctype = " ".join(words[:-1])
    if ctype not in _FAST_TYPES:
        raise TypeError(f"kernel {kernel}: parameter {param.strip()!r} has a type the launcher cannot pack; "
                        f"use a pointer, {', '.join(sorted(_FAST_TYPES))}")
    return _FAST_TYPES[ctype]


def _fast_kernel(source, name):
    module = _FAST_MODULES.get(source)
    if module is None:
        import hashlib
        import re

        from torch.utils.cpp_extension import load_inline

        rows = []
        pattern = r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)'
        for m in re.finditer(pattern, re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S)):
            params = [p for p in m.group(2).split(",") if p.strip() and p.strip() != "void"]
            rows.append(f'{{"{m.group(1)}", (const void*){m.group(1)}, '
                        f'"{"".join(_fast_param(m.group(1), p) for p in params)}"}},')
        table = ('\nstruct FastKernel { const char* name; const void* fn; const char* params; };\n'
                 'extern "C" const FastKernel FAST_KERNELS[] = {\n' + "\n".join(rows) + "\n{0, 0, 0}};\n")
        tag = hashlib.sha256(source.encode()).hexdigest()[:16]
        module = load_inline(name=f"fast_{tag}", cpp_sources=_FAST_GLUE, cuda_sources=source + table,
                             no_implicit_headers=True, extra_cuda_cflags=["-O3"])
        _FAST_MODULES[source] = module
    if not hasattr(module, name):
        raise ValueError(f'no extern "C" __global__ kernel named {name!r} in the source')
    launch = getattr(module, name)

    def kernel(grid=(1, 1, 1), block=(1, 1, 1), args=(), shared_mem=0):
        launch(grid, block, shared_mem, *args)

    return kernel
# ---- end of the fast CUDA launcher

_SRC = r"""
#define NEG_INF (-__int_as_float(0x7f800000))
#define NO_INDEX 0x7fffffffffffffffLL

// Is (bv, bi) a better answer than (av, ai)? NaN is the maximum; ties go to the smaller index.
__device__ __forceinline__ bool better(float bv, long long bi, float av, long long ai) {
    const bool bn = bv != bv, an = av != av;
    if (bn || an) return bn && (!an || bi < ai);
    return bv > av || (bv == av && bi < ai);
}

__device__ __forceinline__ void warp_best(float& v, long long& i) {
    for (int o = 16; o > 0; o >>= 1) {
        const float v2 = __shfl_xor_sync(0xffffffffu, v, o);
        const long long i2 = __shfl_xor_sync(0xffffffffu, i, o);
        if (better(v2, i2, v, i)) {
            v = v2;
            i = i2;
        }
    }
}

extern "C" __global__ void argmax_rows(const float* __restrict__ x, long long* __restrict__ out,
                                       double rows_d, int cols) {
    __shared__ float shv[32];
    __shared__ long long shi[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const long long rows = (long long)rows_d;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + r * cols;
        float bv = NEG_INF;
        long long bi = NO_INDEX;
        for (int k = threadIdx.x; k < cols; k += blockDim.x) {
            const float v = xr[k];
            if (better(v, k, bv, bi)) {
                bv = v;
                bi = k;
            }
        }
        warp_best(bv, bi);
        __syncthreads();  // the previous row's reads of shv / shi are done
        if (lane == 0) {
            shv[warp] = bv;
            shi[warp] = bi;
        }
        __syncthreads();
        if (warp == 0) {
            bv = lane < nw ? shv[lane] : NEG_INF;
            bi = lane < nw ? shi[lane] : NO_INDEX;
            warp_best(bv, bi);
            if (lane == 0) out[r] = bi;
        }
    }
}

extern "C" __global__ void argmax_cols(const float* __restrict__ x, long long* __restrict__ out,
                                       double outer_d, int d, double inner_d) {
    const long long outer = (long long)outer_d, inner = (long long)inner_d;
    const long long total = outer * inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const long long o = t / inner;
        const float* p = x + o * d * inner + (t - o * inner);
        float bv = NEG_INF;
        long long bi = NO_INDEX;
        for (int k = 0; k < d; ++k) {
            const float v = p[k * inner];
            if (better(v, k, bv, bi)) {
                bv = v;
                bi = k;
            }
        }
        out[t] = bi;
    }
}
"""
_KERNELS: dict = {}


def _kernel(name: str):
    if name not in _KERNELS:
        _KERNELS[name] = _fast_kernel(_SRC, name)
    return _KERNELS[name]


def _argmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    if x.dtype != torch.float32:
        raise TypeError(f"this kernel is written for float32, got {x.dtype}")
    nd = max(x.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(f"dim {dim} out of range for a {x.dim()}-d tensor")
    dim %= nd
    x = x.contiguous()
    shape = list(x.shape) or [1]
    d = shape[dim]
    if d == 0:
        raise IndexError("argmax over an empty dimension")
    if d >= 2**31:
        raise ValueError("reduced dimension too long for this kernel (2**31 or more)")
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
    out = torch.empty(shape[:dim] + shape[dim + 1:] if x.dim() else [], dtype=torch.int64, device=x.device)
    if out.numel() == 0:
        return out
    if inner == 1:
        threads = 512 if d >= 16384 else 256
        _kernel("argmax_rows")(grid=(min(outer, 1 << 20), 1, 1), block=(threads, 1, 1),
                               args=[x, out, float(outer), d])
    else:
        blocks = min((outer * inner + 255) // 256, 1 << 16)
        _kernel("argmax_cols")(grid=(blocks, 1, 1), block=(256, 1, 1),
                               args=[x, out, float(outer), d, float(inner)])
    return out


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _argmax(x, self.dim)
