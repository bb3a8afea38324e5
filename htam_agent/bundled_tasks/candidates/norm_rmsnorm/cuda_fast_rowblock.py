"""RMSNorm in the fast CUDA form: the kernel of cuda_rowblock.py (one 512-thread block per row, a
sum-of-squares pass, float4 when aligned, with a warp-shuffle + shared-memory reduction, then one pass
writing x * rsqrt(mean + eps) * weight), built by nvcc without torch headers and launched through the fast
CUDA launcher; the host checks are the Python of `forward`. Fast-form rewrite of
htam_agent/bundled_tasks/candidates/norm_rmsnorm/cuda_rowblock.py (issue 21).
"""

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

_SOURCE = r"""
#define THREADS 512

__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS) rmsnorm_rowblock(
        const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, long long cols,
        float eps, bool vec) {
    const long long off = (long long)blockIdx.x * cols;
    const float* xr = x + off;
    float* yr = y + off;
    float ss = 0.0f;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (long long i = threadIdx.x; i < cols / 4; i += THREADS) {
            const float4 v = x4[i];
            ss += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
        }
    } else {
        for (long long i = threadIdx.x; i < cols; i += THREADS) ss += xr[i] * xr[i];
    }
    ss = warp_sum(ss);
    __shared__ float part[THREADS / 32];
    __shared__ float row_rinv;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) part[warp] = ss;
    __syncthreads();
    if (warp == 0) {
        ss = warp_sum(lane < THREADS / 32 ? part[lane] : 0.0f);
        if (lane == 0) row_rinv = rsqrtf(ss / (float)cols + eps);
    }
    __syncthreads();
    const float rinv = row_rinv;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const float4* w4 = reinterpret_cast<const float4*>(w);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (long long i = threadIdx.x; i < cols / 4; i += THREADS) {
            const float4 v = x4[i], ww = w4[i];
            float4 o;
            o.x = v.x * rinv * ww.x;
            o.y = v.y * rinv * ww.y;
            o.z = v.z * rinv * ww.z;
            o.w = v.w * rinv * ww.w;
            y4[i] = o;
        }
    } else {
        for (long long i = threadIdx.x; i < cols; i += THREADS) yr[i] = xr[i] * rinv * w[i];
    }
}
"""
_THREADS = 512
_rmsnorm = _fast_kernel(_SOURCE, "rmsnorm_rowblock")  # built at import


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight.contiguous()
        for t in (x, w):
            if not (t.is_cuda and t.dtype == torch.float32):
                raise ValueError("x and weight must be float32 CUDA tensors")
        if x.dim() < 1:
            raise ValueError("x must have at least one dimension")
        x = x.contiguous()
        cols = x.size(-1)
        if w.numel() != cols:
            raise ValueError("weight must have size x.size(-1)")
        out = torch.empty_like(x)
        if x.numel() == 0:
            return out
        rows = x.numel() // cols
        if rows > 2**31 - 1:
            raise ValueError("too many rows for a 1-D grid")
        vec = cols % 4 == 0 and all(t.data_ptr() % 16 == 0 for t in (x, w, out))
        _rmsnorm(grid=(rows, 1, 1), block=(_THREADS, 1, 1), args=[x, w, out, cols, float(self.eps), vec])
        return out
