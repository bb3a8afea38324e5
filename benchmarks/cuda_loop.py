"""What a CUDA candidate costs to build and to launch, in the fast form and in KernelBench's usual form (issue 21).

    python benchmarks/cuda_loop.py [--repeats 3] [--usual-repeats 2] [--launch-sizes 1024,1048576,...]
        [--skip build,launch] [--out FILE.json]

Prints one JSON line. Builds run torch's `load_inline` as the evaluator's builds do (a build folder of their
own, the evaluator's precompiled `torch/extension.h` from build_cache), with real nvcc and the host compiler:

- `fast_form_cold_build_s`: a new candidate in the fast form (htam_agent/coder/exemplar/fast_cuda.py), cold:
  an empty build folder (each repeat's source differs by a comment, so nothing is reused), the precompiled
  header present (built first, not counted), to a loadable build (the module imported);
- `usual_form_cold_build_s`: the same for a `load_inline` candidate with `torch/extension.h` in
  `cuda_sources` (the bundled leaky-ReLU `cuda_vec4.py`);
- `fast_form_warm_build_s`: the fast candidate again in a fresh module table, its build folder already
  there (ninja finds nothing to do; the module is imported again).

On a CPU-only torch wheel (the 2-core VMs) nothing CUDA can be linked from torch: the CMake-generated
`c10/cuda/impl/cuda_cmake_macros.h` is stood in for by its one define and empty `libc10_cuda.so` /
`libtorch_cuda.so` satisfy the link line, so the figures are the real compile and link work. The fast form
imports (it references no torch symbol); the usual form's module cannot be imported there (undefined
c10::cuda symbols), so its figure stops at the linked `.so` (`usual_form_loaded: false`).

On a GPU (`launch`, skipped without one): host microseconds per call, 200 back-to-back calls after a
warm-up, the clock stopped before the final synchronize, median and spread over 5 rounds, at each size:
eager `torch.relu`, the fast form's ReLU forward (contiguous + empty_like + launch) and its bare launch,
and the same kernel through `torch.cuda._compile_kernel` (the KernelBench honest ReLU).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from htam_agent.bench.launcher_marker import source_of

ROOT = Path(__file__).resolve().parents[1]
FAST = ROOT / "tests" / "cheats" / "kernelbench" / "fast" / "honest" / "l1_19_relu.py"  # launcher expanded
NVRTC = ROOT / "tests" / "cheats" / "kernelbench" / "honest" / "l1_19_relu.py"
USUAL = ROOT / "htam_agent" / "bundled_tasks" / "candidates" / "elementwise_leaky_relu" / "cuda_vec4.py"


def _stats(xs: list[float], digits: int = 2) -> dict:
    med = statistics.median(xs)
    return {"median": round(med, digits), "min": round(min(xs), digits), "max": round(max(xs), digits),
            "spread_pct": round(100 * (max(xs) - min(xs)) / med, 1) if med else 0.0, "n": len(xs),
            "all": [round(x, digits) for x in xs]}


def _cuda_home() -> str:
    """The toolkit's folder (a CPU wheel does not look for one); /usr/local/bin/nvcc may be a wrapper script."""
    if Path("/usr/local/cuda/bin/nvcc").exists():
        return "/usr/local/cuda"
    nvcc = shutil.which("nvcc")
    return str(Path(os.path.realpath(nvcc)).parents[1]) if nvcc else "/usr/local/cuda"


def _build_shim(work: Path, pch: Path | None) -> None:
    """Builds as the evaluator makes them: a fresh folder per call, the precompiled `torch/extension.h` on the
    include path for sources that include torch's headers. On a CPU-only torch, stand-ins for the two things
    only a CUDA wheel has (the generated header, the CUDA libraries on the link line)."""
    import torch
    import torch.utils.cpp_extension as ext

    cpu_wheel = torch.version.cuda is None
    lib = work / "stub_lib"
    if cpu_wheel:
        ext.CUDA_HOME = os.environ.get("CUDA_HOME") or _cuda_home()
        inc = work / "stub_include" / "c10" / "cuda" / "impl"
        inc.mkdir(parents=True, exist_ok=True)
        (inc / "cuda_cmake_macros.h").write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        lib.mkdir(exist_ok=True)
        for name in ("c10_cuda", "torch_cuda"):
            subprocess.run(["gcc", "-shared", "-o", str(lib / f"lib{name}.so"), "-x", "c", "/dev/null"], check=True)
    original = ext.load_inline

    def load_inline(name, cpp_sources, *args, **kwargs):
        material = json.dumps([name, cpp_sources, kwargs.get("cuda_sources")], default=str)
        folder = work / "builds" / f"{name}_{hashlib.sha256(material.encode()).hexdigest()[:12]}"
        folder.mkdir(parents=True, exist_ok=True)  # same sources: the same folder (a warm build)
        kwargs["build_directory"], kwargs["use_pch"] = str(folder), False
        paths = list(kwargs.get("extra_include_paths") or [])
        if pch is not None and not kwargs.get("no_implicit_headers"):
            paths = [str(pch), *paths]
        if cpu_wheel:
            paths = [str(work / "stub_include"), *paths]
            kwargs["extra_ldflags"] = [f"-L{lib}", *(kwargs.get("extra_ldflags") or [])]
            kwargs["with_cuda"] = True
        kwargs["extra_include_paths"] = paths
        return original(name, cpp_sources, *args, **kwargs)

    ext.load_inline = load_inline


def _exec(path: Path, text: str | None = None) -> dict:
    g: dict = {"__name__": f"cuda_loop_{path.stem}"}
    exec(compile(text if text is not None else source_of(path), str(path), "exec"), g)
    return g


def _timed_build(fn) -> tuple[float, bool, str]:
    t0 = time.perf_counter()
    try:
        fn()
        return time.perf_counter() - t0, True, ""
    except ImportError as exc:  # linked, but not importable here (the usual form on a CPU wheel)
        return time.perf_counter() - t0, False, str(exc)[-200:]


def builds(repeats: int, usual_repeats: int, root: Path) -> dict:
    from htam_agent.evaluation.sandbox import build_cache

    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 1))
    t0 = time.perf_counter()
    pch = build_cache._pch_dir(root / "pchroot", [], [])  # the evaluator's PCH, present before the timings
    out: dict = {"pch_build_s": round(time.perf_counter() - t0, 1), "pch_present": pch is not None}
    _build_shim(root, pch)
    stamp = time.strftime("%H%M%S")
    fast = _exec(FAST)
    times, loaded = [], []
    for i in range(repeats):
        src = fast["_SRC"] + f"\n// cuda_loop cold build {stamp}-{i}\n"
        dt, ok, err = _timed_build(lambda s=src: fast["_fast_kernel"](s, "relu_kernel"))
        times.append(dt)
        loaded.append(ok)
        if err:
            out["fast_form_import_error"] = err
    out["fast_form_cold_build_s"] = _stats(times)
    out["fast_form_loaded"] = all(loaded)
    warm = []
    for _ in range(repeats):
        fresh = _exec(FAST)  # a new process's view: its own module table, the build folder already there
        dt, _, _ = _timed_build(lambda f=fresh: f["_fast_kernel"](fast["_SRC"] + f"\n// cuda_loop cold build "
                                                                  f"{stamp}-0\n", "relu_kernel"))
        warm.append(dt)
    out["fast_form_warm_build_s"] = _stats(warm)
    times, loaded = [], []
    text = USUAL.read_text()
    marker = "__global__"
    for i in range(usual_repeats):
        variant = text.replace(marker, f"// cuda_loop cold build {stamp}-{i}\n{marker}", 1)
        dt, ok, err = _timed_build(lambda v=variant: _exec(USUAL, v))
        times.append(dt)
        loaded.append(ok)
        if err:
            out["usual_form_import_error"] = err
    if times:
        out["usual_form_cold_build_s"] = _stats(times)
        out["usual_form_loaded"] = all(loaded)
    out["usual_form_candidate"] = str(USUAL.relative_to(ROOT))
    out["fast_form_candidate"] = str(FAST.relative_to(ROOT))
    out["builds_via"] = ("torch's load_inline, a fresh build folder per build, the evaluator's precompiled "
                         "torch/extension.h (build_cache._pch_dir) on the include path of the usual form")
    return out


def _host_us(call, rounds: int = 5, calls: int = 200) -> dict:
    import torch

    for _ in range(20):
        call()
    torch.cuda.synchronize()
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            call()
        per.append((time.perf_counter_ns() - t0) / calls / 1000)
        torch.cuda.synchronize()
    return _stats(per, 2)


def _launch_row(n: int, fast: dict, nvrtc: dict, fast_model, nvrtc_model) -> dict:
    import torch

    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    ref = torch.relu(x)
    assert torch.equal(fast_model(x), ref) and torch.equal(nvrtc_model(x), ref), "ReLU kernels disagree"
    k, nk = fast["_get_kernel"](), nvrtc["_get_kernel"]()
    blocks = min((n + 1023) // 1024, 8192)
    args = [x, y, float(n), 0.0]
    row = {
        "eager_relu_us": _host_us(lambda: torch.relu(x)),
        "fast_forward_us": _host_us(lambda: fast_model(x)),
        "fast_launch_us": _host_us(lambda: k(grid=(blocks, 1, 1), block=(256, 1, 1), args=args)),
        "compile_kernel_forward_us": _host_us(lambda: nvrtc_model(x)),
        "compile_kernel_launch_us": _host_us(lambda: nk(grid=(blocks, 1, 1), block=(256, 1, 1), args=args)),
    }
    out = {name: v["median"] for name, v in row.items()}
    out["spread_pct"] = {name: v["spread_pct"] for name, v in row.items()}
    return out


def launches(sizes: list[int]) -> dict:
    import torch

    if not torch.cuda.is_available():
        return {"launch": "skipped: no GPU"}
    fast, nvrtc = _exec(FAST), _exec(NVRTC)
    fast_model, nvrtc_model = fast["ModelNew"](), nvrtc["ModelNew"]()
    out: dict = {}
    for n in sizes:
        out[str(n)] = _launch_row(n, fast, nvrtc, fast_model, nvrtc_model)
        torch.cuda.empty_cache()
    return {"launch_host_us": out, "gpu": torch.cuda.get_device_name()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="cold builds of the fast form")
    ap.add_argument("--usual-repeats", type=int, default=2, help="cold builds of the usual form (~25 s each)")
    ap.add_argument("--launch-sizes", default="1024,1048576,3145728,67108864")
    ap.add_argument("--skip", default="", help="comma list: build,launch")
    ap.add_argument("--build-root", type=Path, help="default: a fresh temporary folder")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    import torch

    result: dict = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "host": platform.node(),
                    "cpus": os.cpu_count(), "torch": torch.__version__,
                    "loadavg_before": [round(v, 2) for v in os.getloadavg()]}
    if "build" not in skip:
        root = args.build_root or Path(tempfile.mkdtemp(prefix="cuda_loop_"))
        result.update(builds(args.repeats, args.usual_repeats, root))
    if "launch" not in skip:
        result.update(launches([int(s) for s in args.launch_sizes.split(",") if s]))
    result["loadavg_after"] = [round(v, 2) for v in os.getloadavg()]
    line = json.dumps(result)
    print(line, flush=True)
    if args.out:
        args.out.write_text(line + "\n")


if __name__ == "__main__":
    main()
