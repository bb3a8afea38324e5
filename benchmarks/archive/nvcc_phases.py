"""Where a `load_inline` CUDA candidate's build time goes, phase by phase (issue 16).

    python benchmarks/archive/nvcc_phases.py [CANDIDATE.py ...] [--arch 9.0] [--repeats 2] [--out FILE.json]

For each candidate (default: the bundled `load_inline` CUDA candidates) the script captures the sources the
candidate passes to `load_inline`, lets torch write its own build file (`build.ninja`) exactly as the
evaluator's build would, and then runs torch's own compile commands one at a time under a clock:

- `cuda.cu` through nvcc with `--time` (nvcc's own per-phase table: preprocessing, cudafe++ front end, cicc,
  ptxas, fatbinary, the host compiler on the cudafe++ output), and the same with nvcc's `-E` alone;
- `main.cpp` (the pybind binding) through the host compiler, with and without the evaluator's precompiled
  `torch/extension.h`.

On a CPU-only torch wheel the one generated header `c10/cuda/impl/cuda_cmake_macros.h` is missing; the script
puts a stand-in (the single define a CUDA build writes there) first on nvcc's include path.

No GPU is needed (nothing is linked or run): the figures are compile work only, on this machine's CPU. The
H200 host's CPU is faster per core; the split between phases is what carries over. Each command is timed
`--repeats` times; the median and the spread are printed.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shlex
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class _Captured(Exception):
    def __init__(self, kwargs: dict) -> None:
        super().__init__("captured")
        self.kwargs = kwargs


def capture_sources(path: Path) -> dict:
    """The keyword arguments the candidate gives `load_inline` (its module is executed up to that call)."""
    import torch.utils.cpp_extension as ext

    original = ext.load_inline

    def fake(*args, **kwargs):
        names = ["name", "cpp_sources", "cuda_sources", "functions"]
        kwargs.update(dict(zip(names, args, strict=False)))
        raise _Captured(kwargs)

    ext.load_inline = fake
    try:
        exec(compile(path.read_text(), str(path), "exec"), {"__name__": "candidate"})
    except _Captured as got:
        return got.kwargs
    finally:
        ext.load_inline = original
    raise ValueError(f"{path}: no load_inline call at import")


def write_build_file(kwargs: dict, folder: Path) -> dict[str, str]:
    """Let torch write build.ninja for these sources (its compile lines are what we time); returns the
    {object: command} of its compile rules, variables expanded."""
    import torch.utils.cpp_extension as ext

    if ext.CUDA_HOME is None:  # the CPU wheel does not look for a toolkit: the one nvcc on PATH belongs to
        import shutil

        nvcc = shutil.which("nvcc")
        ext.CUDA_HOME = str(Path(os.path.realpath(nvcc)).parents[1]) if nvcc else "/usr/local/cuda"
    kw = dict(kwargs, build_directory=str(folder), verbose=False, with_cuda=True)
    kw.pop("use_pch", None)
    try:
        ext.load_inline(**kw)
    except Exception:  # the CPU wheel has no libtorch_cuda to link: the objects are built, the link fails
        pass
    return parse_ninja(folder / "build.ninja")


def parse_ninja(path: Path) -> dict[str, str]:
    text = path.read_text()
    variables = dict(re.findall(r"^(\w+) = (.*)$", text, flags=re.M))
    rules = {}
    for name, body in re.findall(r"^rule (\w+)\n((?:  .*\n)+)", text, flags=re.M):
        rules[name] = re.search(r"command = (.*)", body).group(1)
    builds = {}
    for out, rule, src in re.findall(r"^build ([^:]+): (\w+) (\S+)$", text, flags=re.M):
        if rule not in rules:
            continue
        cmd = rules[rule].replace("$in", src).replace("$out", out)
        for _ in range(3):
            cmd = re.sub(r"\$(\w+)", lambda m: variables.get(m.group(1), ""), cmd)
        builds[out] = cmd
    return builds


def timed(cmd: list[str], repeats: int, cwd: Path) -> tuple[list[float], str]:
    times, err = [], ""
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            err = (proc.stderr or proc.stdout)[-600:]
            break
    return times, err


def nvcc_phase_table(cmd: list[str], cwd: Path) -> dict[str, float]:
    """nvcc's own --time table for one compile: milliseconds per phase (summed over repeats of a phase)."""
    with tempfile.NamedTemporaryFile(suffix=".csv", delete=False) as f:
        table = f.name
    subprocess.run([*cmd, "--time", table], cwd=cwd, capture_output=True, text=True)
    phases: dict[str, float] = {}
    with open(table) as f:
        for row in csv.reader(io.StringIO(f.read())):
            # source file, phase, inputs, output, arch, tool, metric, unit
            if len(row) >= 8 and row[0].strip() != "source file name" and row[-1].strip() == "ms":
                phase = row[1].strip()
                try:
                    phases[phase] = round(phases.get(phase, 0.0) + float(row[-2]), 1)
                except ValueError:
                    continue
    os.unlink(table)
    return phases


def _stats(times: list[float]) -> dict[str, float]:
    med = statistics.median(times)
    return {"median_s": round(med, 2), "min_s": round(min(times), 2), "max_s": round(max(times), 2),
            "spread_pct": round(100 * (max(times) - min(times)) / med, 1) if med else 0.0, "n": len(times)}


def measure(path: Path, repeats: int) -> dict:
    from htam_agent.evaluation.sandbox import build_cache

    kwargs = capture_sources(path)
    with tempfile.TemporaryDirectory(prefix="nvcc_phases_") as tmp:
        folder = Path(tmp)
        builds = write_build_file(kwargs, folder)
        cuda_cmd = next((c for o, c in builds.items() if o.endswith(".cuda.o")), None)
        cpp_cmd = next((c for o, c in builds.items() if o.endswith("main.o")), None)
        if not cuda_cmd or not cpp_cmd:
            raise ValueError(f"{path}: build.ninja has no cuda and main compile rules: {sorted(builds)}")
        out: dict = {"candidate": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)}
        nvcc = shlex.split(cuda_cmd)
        # The CPU wheel ships torch's CUDA headers but not the one CMake generates for c10_cuda; a stand-in
        # with the line a CUDA build writes there lets nvcc parse the same headers a GPU host's build does.
        stub = folder / "stub_include" / "c10" / "cuda" / "impl"
        stub.mkdir(parents=True)
        (stub / "cuda_cmake_macros.h").write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        nvcc = nvcc[:1] + [f"-I{folder / 'stub_include'}"] + nvcc[1:]
        out["nvcc_command"] = cuda_cmd
        times, err = timed(nvcc, repeats, folder)
        out["cuda.cu (nvcc -c)"] = {**_stats(times), **({"error": err} if err else {})}
        out["nvcc --time phases (ms)"] = nvcc_phase_table(nvcc, folder)
        pre = [a for a in nvcc if a not in ("-c",)]
        pre = pre[: pre.index("-o")] + ["-E", "-o", "/dev/null"] if "-o" in pre else pre + ["-E"]
        times, err = timed(pre, repeats, folder)
        out["cuda.cu preprocess only (nvcc -E)"] = {**_stats(times), **({"error": err} if err else {})}
        host = shlex.split(cpp_cmd)
        times, err = timed(host, repeats, folder)
        out["main.cpp (host compiler, no PCH)"] = {**_stats(times), **({"error": err} if err else {})}
        flags = [a for a in host if a.startswith(("-O", "-f", "-m", "-D")) and "TORCH_EXTENSION_NAME" not in a]
        pch = build_cache._pch_dir(folder / "pchroot", [], [])
        if pch is not None:
            times, err = timed(host[:1] + [f"-I{pch}"] + host[1:], repeats, folder)
            out["main.cpp (host compiler, evaluator's PCH)"] = {**_stats(times), **({"error": err} if err else {})}
            out["pch_note"] = ("the PCH is built for the default flags; gcc uses it only when the flags match, "
                               f"else it parses the header (flags seen: {' '.join(flags)[:200]})")
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("candidates", nargs="*", type=Path)
    ap.add_argument("--arch", default="9.0", help="TORCH_CUDA_ARCH_LIST, as the evaluator sets it on an H200")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    os.environ["TORCH_CUDA_ARCH_LIST"] = args.arch
    os.environ.setdefault("MAX_JOBS", "1")
    paths = args.candidates or sorted(p for p in (ROOT / "htam_agent/bundled_tasks/candidates").glob("*/cuda_*.py")
                                      if "load_inline" in p.read_text())
    results = []
    for path in paths:
        print(f"== {path}", flush=True)
        try:
            res = measure(path.resolve(), args.repeats)
        except Exception as exc:  # noqa: BLE001 - one bad candidate must not hide the others
            res = {"candidate": str(path), "error": f"{type(exc).__name__}: {exc}"}
        for k, v in res.items():
            if k not in ("candidate", "nvcc_command"):
                print(f"   {k}: {json.dumps(v)}", flush=True)
        results.append(res)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
