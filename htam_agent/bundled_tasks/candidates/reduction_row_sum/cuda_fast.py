"""Row sum as a plain CUDA kernel compiled by NVRTC (torch.cuda._compile_kernel): one 256-thread block per
row, float4 loads when the row is aligned, warp-shuffle reduction. Compiled once, on the first forward.
Fast-form rewrite of htam_agent/bundled_tasks/candidates/reduction_row_sum/cuda_nvrtc.py
(htam_agent.coder.exemplar.fast_cuda.to_fast_form): the same kernels, built by nvcc without torch headers and
launched through the fast CUDA launcher.
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
extern "C" __global__ void row_sum_f32(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* row = x + (long long)blockIdx.x * cols;
    float acc = 0.0f;
    const bool vec = ((cols & 3) == 0) && ((((unsigned long long)row) & 15ull) == 0);
    if (vec) {
        const float4* row4 = reinterpret_cast<const float4*>(row);
        const int n4 = cols >> 2;
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            const float4 v = row4[i];
            acc += (v.x + v.y) + (v.z + v.w);
        }
    } else {
        for (int i = threadIdx.x; i < cols; i += blockDim.x) acc += row[i];
    }
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    __shared__ float partial[32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (int)(blockDim.x >> 5) ? partial[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
        if (lane == 0) y[blockIdx.x] = acc;
    }
}
"""

_KERNEL = None
_THREADS = 256
_MAX_ROWS_PER_LAUNCH = 1 << 30


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = _fast_kernel(_SOURCE, "row_sum_f32")
    return _KERNEL


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (x.is_cuda and x.dtype == torch.float32 and x.dim() >= 1):
            raise ValueError("x must be a float32 CUDA tensor with at least one dimension")
        x = x.contiguous()
        cols = x.shape[-1]
        if cols >= 2**31:
            raise ValueError("rows longer than 2**31 - 1 elements are not supported")
        out = torch.empty(x.shape[:-1], device=x.device, dtype=x.dtype)
        rows = out.numel()
        if rows == 0:
            return out
        if cols == 0:
            return out.zero_()
        x2, y = x.view(rows, cols), out.view(rows)
        kernel = _kernel()
        for start in range(0, rows, _MAX_ROWS_PER_LAUNCH):
            count = min(_MAX_ROWS_PER_LAUNCH, rows - start)
            kernel(grid=(count, 1, 1), block=(_THREADS, 1, 1), args=[x2[start : start + count], y[start : start + count], cols])
        return out
