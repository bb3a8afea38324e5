"""Trusted, shared builds of `load_inline` extensions: the only writer of the shared build cache.

A candidate's sandbox never writes the shared cache (Landlock leaves it read-only): its `load_inline` sends
the call's arguments to the checker (sandbox/build_cache.py), and the checker builds here. An entry is the build of
one key's exact inputs, so no candidate can plant one that another candidate loads:

- key = sha256 of everything that decides the build: name, sources, functions, flags, include paths, the
  torch, Python, compiler and CUDA versions, the arch list and this builder's version;
- the compile runs in a forked child of the checker, confined like a sandbox (Landlock: writes only to its
  staging folder; no capabilities; no inherited descriptors: candidate flags reach the compiler) and never
  loads what it built (a `.so`'s constructors are code);
- the checker then hashes every produced file into `manifest.json` (beside, not inside, the folder the
  compile could write) and renames the staging folder into `<root>/ext/<key>` atomically;
- a hit re-hashes the `.so` against its manifest; the checker hands it to the sandbox as a read-only
  descriptor (so the sandbox needs no access to the shared root at all), and the sandbox copies it into its
  private root, checks the hash on the copy and loads the copy;
- the precompiled `torch/extension.h` (one per flag signature) is made the same way, hashed when made and
  checked before every build that uses it;
- locks carry their owner (pid, start time, host) and are broken when the owner is dead or over LOCK_LIMIT_S.

Arguments outside a safe vocabulary (flags that load compiler plugins, name files, write elsewhere; include
folders under temporary places) are not shared: the sandbox builds those in its private root instead.
Imports only torch and the standard library.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .protocol import SandboxTimeout

BUILDER_VERSION = 1
LOCK_LIMIT_S = 900.0  # longer than any honest build (the compile phase's limit is 600 s)
MAX_SOURCE_BYTES = 2 << 20
MAX_BUILDS = 16  # builds one evaluation may ask the checker for; more are built privately
_LIST_ARGS = ("cpp_sources", "cuda_sources", "extra_cflags", "extra_cuda_cflags", "extra_ldflags",
              "extra_include_paths")
_BOOL_ARGS = ("with_cuda", "is_python_module", "with_pytorch_error_handling", "no_implicit_headers")
_IGNORED = ("verbose", "build_directory", "keep_intermediates", "use_pch")  # ours to decide
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
# Flags a shared build accepts: optimisation, code generation, warnings, macros, standard, libraries, CUDA's
# arch and ptxas options. Anything else (plugins, specs, -B, wrappers, response files, dumps, profiles,
# linker options, output names) is legal but private to the candidate's own sandbox.
_SAFE_FLAG = re.compile(r"""(
    -O[0-3sgz]? | -g[0-3]? | -std=[\w+]+ | -D\w+(=[\w.+\-*/()<>,:"']*)? | -U\w+ | -w | -pthread |
    -f(?!plugin|dump|profile|record|debug-prefix|file-prefix|macro-prefix|auto-profile|instrument|
        stack-usage|callgraph|opt-info|save|diagnostics|lto|offload|coverage|test-coverage)[\w\-=.,+]+ |
    -m[\w\-=.,+]+ | -W(?![lpa],)[\w\-=+]+ | -l\w[\w.+\-]* |
    --?use_fast_math | --expt-relaxed-constexpr | --expt-extended-lambda | --extended-lambda | -lineinfo |
    (-arch|--gpu-architecture|-code|--gpu-code)=[\w,]+ | -gencode=?arch=\w+,code=\[?[\w,]+\]? |
    -gencode | arch=\w+,code=\[?[\w,]+\]? | -Xptxas(=[\w\-=,]+)? | --ptxas-options=[\w\-=,]+ |
    -Xcompiler | --?maxrregcount=\d+ | -rdc=(true|false) | --restrict | -res-usage | --resource-usage |
    -t\d+ | --threads=?\d*
)""", re.X)
_ENV_FAILURE = ("no space left on device", "killed signal terminated program", "internal compiler error: killed",
                "cannot allocate memory", "virtual memory exhausted", "resource temporarily unavailable",
                "disk quota exceeded", "read-only file system")


class NotShared(ValueError):
    """These arguments are built in the candidate's private root, not in the shared cache."""


class BuildTimeout(SandboxTimeout):
    """The candidate's build ran past the compile phase's limit: the evaluation ends as a timeout."""


# --------------------------------------------------------------------------------------------------------
# What a build is


def _strings(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise NotShared(f"{what} is not a string or a list of strings")


def normalize(name: Any, args: dict[str, Any]) -> dict[str, Any]:
    """The build's inputs in one canonical form; NotShared for anything a shared build does not take."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise NotShared(f"extension name {name!r} is not a plain identifier")
    unknown = sorted(set(args) - set(_LIST_ARGS) - set(_BOOL_ARGS) - set(_IGNORED) - {"functions"})
    if unknown:
        raise NotShared(f"arguments {', '.join(unknown)} are built privately")
    spec: dict[str, Any] = {"name": name}
    for k in _LIST_ARGS:
        spec[k] = _strings(args.get(k), k)
    for k in _BOOL_ARGS:
        v = args.get(k)
        if v is not None and not isinstance(v, bool):
            raise NotShared(f"{k} is not a bool")
        spec[k] = v
    fns = args.get("functions")
    if isinstance(fns, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in fns.items()):
        spec["functions"] = dict(fns)
    else:
        spec["functions"] = _strings(fns, "functions") if fns is not None else None
    if sum(len(s) for k in ("cpp_sources", "cuda_sources") for s in spec[k]) > MAX_SOURCE_BYTES:
        raise NotShared("sources over 2 MB")
    for k in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags"):
        for flag in spec[k]:
            if flag.startswith("-L"):
                _check_folder(flag[2:], f"{k} {flag!r}")
            elif flag and (not _SAFE_FLAG.fullmatch(flag) or any(c in flag for c in "\n\r\0$ ")):
                raise NotShared(f"{k} {flag!r} is outside what shared builds accept")
    for inc in spec["extra_include_paths"]:
        _check_folder(inc, f"include folder {inc!r}")
    return spec


def _check_folder(path: str, what: str) -> None:
    """A folder a shared build may read: absolute, plain, outside every place a sandbox could write to."""
    temporary = [os.path.realpath(p) for p in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm", "/run")]
    real = os.path.realpath(path) if path else ""
    if (not os.path.isabs(path) or any(c in path for c in "\n\r\0$ ")
            or any(real == t or real.startswith(t + os.sep) for t in temporary)):
        raise NotShared(f"{what}: only absolute folders outside temporary places are shared")


_TOOLS: dict[str, str] = {}


def _tool_version(cmd: list[str]) -> str:
    """Which compiler binary this is (resolved path, size, mtime): an upgrade changes every key. A stat, not
    `--version`: a process per evaluation would cost every cache hit a fork and exec."""
    key = " ".join(cmd)
    if key not in _TOOLS:
        found = shutil.which(cmd[0]) or cmd[0]
        try:
            real = os.path.realpath(found)
            st = os.stat(real)
            _TOOLS[key] = f"{real} {st.st_size} {st.st_mtime_ns}"
        except OSError as exc:
            _TOOLS[key] = f"unavailable: {exc}"
    return _TOOLS[key]


def key_of(spec: dict[str, Any]) -> str:
    """sha256 of the build's inputs and of the environment that turns them into a `.so`."""
    import torch
    import torch.utils.cpp_extension as ext

    env: dict[str, Any] = {
        "builder": BUILDER_VERSION, "torch": torch.__version__, "cuda": torch.version.cuda,
        "python": sys.version.split()[0], "cxx": _tool_version([ext.get_cxx_compiler()]),
        "arch": os.environ.get("TORCH_CUDA_ARCH_LIST", ""),
    }
    if spec["cuda_sources"] and ext.CUDA_HOME:
        env["nvcc"] = _tool_version([os.path.join(ext.CUDA_HOME, "bin", "nvcc")])
    return hashlib.sha256(json.dumps({"spec": spec, "env": env}, sort_keys=True).encode()).hexdigest()


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def open_verified(path: str | Path, sha256: str) -> int:
    """A read-only descriptor of `path` whose content, read through it, has this sha256 (else OSError)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if sha256_fd(fd) != sha256:
            raise OSError(f"{path} changed after it was verified")
    except BaseException:
        os.close(fd)
        raise
    return fd


def sha256_fd(fd: int) -> str:
    h, offset = hashlib.sha256(), 0
    while block := os.pread(fd, 1 << 20, offset):
        h.update(block)
        offset += len(block)
    return h.hexdigest()


def environment_failure(text: str) -> bool:
    """A compiler message whose cause is the machine (disk, memory, a killed compiler), not the source."""
    low = text.lower()
    return any(m in low for m in _ENV_FAILURE)


# --------------------------------------------------------------------------------------------------------
# Locks with owners


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


class OwnedLock:
    """A lock file naming its owner (pid, start time, host, when): broken when the owner is dead or the lock
    is older than `limit_s`. Only the trusted side can create one (sandboxes cannot write the root)."""

    def __init__(self, path: Path, limit_s: float = LOCK_LIMIT_S) -> None:
        self.path, self.limit_s, self.held = path, limit_s, False
        self.broken: list[str] = []

    def _stale(self) -> str | None:
        try:
            st = self.path.stat()
            owner = json.loads(self.path.read_text())
            pid, start, host, since = int(owner["pid"]), str(owner["start"]), owner["host"], float(owner["since"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            return "unreadable" if time.time() - st.st_mtime > 5 else None  # a lock being written
        now = time.time()
        if now - min(since, st.st_mtime) > self.limit_s:
            return f"older than {self.limit_s:.0f} s (owner pid {pid})"
        if since > now + 60:
            return f"claims a time {since - now:.0f} s in the future (owner pid {pid})"
        if host == socket.gethostname() and _start_time(pid) != start:
            return f"owner pid {pid} is dead"
        return None

    def acquire(self, deadline: float) -> bool:
        """Take the lock, waiting for a live owner until `deadline` (monotonic); False when it did not come."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        me = json.dumps({"pid": os.getpid(), "start": _start_time(os.getpid()), "host": socket.gethostname(),
                         "since": time.time()})
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                why = self._stale()
                if why is not None:
                    aside = self.path.with_name(f"{self.path.name}.broken-{os.getpid()}-{time.monotonic_ns()}")
                    try:
                        os.rename(self.path, aside)
                        os.unlink(aside)
                        self.broken.append(why)
                    except OSError:
                        pass
                    continue
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.2)
                continue
            with os.fdopen(fd, "w") as f:
                f.write(me)
            self.held = True
            return True

    def release(self) -> None:
        if self.held:
            self.held = False
            try:
                os.unlink(self.path)
            except OSError:
                pass


# --------------------------------------------------------------------------------------------------------
# The confined child


def _confined(work: Callable[[], None], writable: list[str], deadline: float) -> tuple[bool, str]:
    """Run `work` in a forked child that may write only below `writable` and holds no capability and none
    of the checker's descriptors; it and what it started are killed at `deadline`. (ok, message)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        ok, text = False, ""
        try:
            # It stays in the checker's process group, so a checker killed whole (the parent's limit) takes
            # the compile with it; it also dies with the checker.
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
            os.close(r)
            os.closerange(3, w)
            os.closerange(w + 1, 1 << 16)
            from .containment import landlock, privileges

            how = landlock.restrict_writes(writable)
            if not how.startswith("landlock ABI"):
                raise RuntimeError(f"refusing to build unconfined: {how}")
            privileges.drop_capabilities()
            work()
            ok = True
        except BaseException as exc:  # the compiler's error, reported to the checker
            text = str(exc)
        try:
            os.write(w, json.dumps({"ok": ok, "text": text[-20000:]}).encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks: list[bytes] = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False, "timeout"
            ready, _, _ = select.select([r], [], [], min(left, 1.0))
            if ready:
                data = os.read(r, 1 << 16)
                if not data:
                    break
                chunks.append(data)
    finally:
        os.close(r)
        _kill_below(pid)  # a compile past its deadline, or what it left running, goes before anything is hashed
        os.waitpid(pid, 0)
    try:
        msg = json.loads(b"".join(chunks) or b"{}")
        return bool(msg.get("ok")), str(msg.get("text", "the build process died without a word"))
    except ValueError:
        return False, "the build process sent garbage"


def _kill_below(pid: int) -> None:
    """SIGKILL `pid` and its descendants (found through /proc, deepest last)."""
    from .containment import process_tree

    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += process_tree.children(p)
    for p in seen:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def _pch_command(spec: dict[str, Any]) -> list[str] | None:
    import sysconfig

    import torch.utils.cpp_extension as ext

    if not ext.IS_LINUX or spec["no_implicit_headers"]:
        return None
    compiler = ext.get_cxx_compiler()
    if not ext.check_compiler_is_gcc(compiler):
        return None
    torch_inc = os.path.join(ext._TORCH_PATH, "include")
    return [compiler, "-x", "c++-header", os.path.join(torch_inc, "torch", "extension.h"),
            "-I", torch_inc, "-I", sysconfig.get_path("include"),
            "-I", os.path.join(torch_inc, "torch", "csrc", "api", "include"),
            *[f"-I{p}" for p in spec["extra_include_paths"]], *spec["extra_cflags"],
            "-DTORCH_API_INCLUDE_EXTENSION_H", "-std=c++20", "-fPIC"]


def _write_manifest(folder: Path, files_below: Path, extra: dict[str, Any]) -> dict[str, Any]:
    files = {}
    for base, _dirs, names in os.walk(files_below):
        for n in names:
            p = Path(base) / n
            if not p.is_symlink():
                files[str(p.relative_to(folder))] = sha256_file(p)
    manifest = {"builder": BUILDER_VERSION, "files": files, "made": time.time(), **extra}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def _read_manifest(folder: Path, must: str) -> dict[str, Any] | None:
    """The manifest when the file `must` (relative) still has the hash it was made with, else None."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
        want = manifest["files"][must]
        if manifest.get("builder") == BUILDER_VERSION and sha256_file(folder / must) == want:
            return manifest
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


# --------------------------------------------------------------------------------------------------------
# The service


class BuildService:
    """Builds for one evaluation into a shared root (the checker's `on_event["build"]`), or a private one.

    `facts` lists every build: name, key, cache (hit, built, private, failed), seconds, and the PCH used; it
    goes into the verdict. `environment_failure` says a failure was the evaluator's, not the candidate's.
    """

    def __init__(self, root: str | Path, use_pch: bool = True, max_builds: int = MAX_BUILDS) -> None:
        self.root = Path(root)
        self.use_pch, self.max_builds = use_pch, max_builds
        self.facts: list[dict[str, Any]] = []
        self.environment_failure: str | None = None

    # -- the checker's hook: one answer per request, never an exception -------------------------------
    def handle(self, body: dict[str, Any], deadline: float) -> dict[str, Any]:
        t0 = time.perf_counter()
        fact: dict[str, Any] = {"name": str(body.get("name"))[:100]}
        self.facts.append(fact)
        try:
            if len(self.facts) > self.max_builds:
                raise NotShared(f"more than {self.max_builds} builds in one evaluation")
            args = body.get("args")
            spec = normalize(body.get("name"), args if isinstance(args, dict) else {})
            answer = self.build(spec, deadline, fact)
            if answer.get("ok"):
                fd = open_verified(answer["so"], answer["sha256"])
                fact["seconds"] = round(time.perf_counter() - t0, 3)
                return {"build": answer, "_fds": [fd]}  # the sandbox reads the module through this descriptor
        except BuildTimeout:  # raised through the checker's request: a timeout verdict, never stored
            fact["cache"], fact["seconds"] = "failed", round(time.perf_counter() - t0, 3)
            raise
        except NotShared as exc:
            fact["cache"] = "private"
            answer = {"ok": False, "private": True, "why": str(exc)}
        except Exception as exc:  # the evaluator's failure: the verdict will not be the candidate's
            fact["cache"] = "failed"
            self.environment_failure = f"{type(exc).__name__}: {exc}"
            fact["environment"] = True
            answer = {"ok": False, "kind": "environment", "text": f"the evaluator's build failed: {exc}"}
        fact["seconds"] = round(time.perf_counter() - t0, 3)
        return {"build": answer}

    # -- one extension ---------------------------------------------------------------------------------
    def build(self, spec: dict[str, Any], deadline: float, fact: dict[str, Any]) -> dict[str, Any]:
        from .containment import landlock

        if landlock.landlock_abi() < 1:  # a compile with candidate flags must be confined to be shared
            raise NotShared("no Landlock on this kernel: builds stay private to each sandbox")
        key = key_of(spec)
        fact["key"] = key[:16]
        final = self.root / "ext" / key
        so = f"build/{spec['name']}.so"
        hit = self._verified(final, so)
        if hit is None:
            lock = OwnedLock(self.root / "locks" / f"ext-{key}.lock")
            got = lock.acquire(deadline - 5.0)  # no lock by then: build anyway, in our own staging folder
            if lock.broken:
                fact["broken_locks"] = lock.broken
            try:
                hit = self._verified(final, so)
                if hit is None:
                    failure = self._build_new(spec, key, final, so, deadline, fact)
                    if failure is not None:
                        return failure
                    hit = self._verified(final, so)
                    if hit is None:
                        raise RuntimeError(f"the build of {spec['name']} was not there after it was made")
                else:
                    fact["cache"] = "hit"
            finally:
                if got:
                    lock.release()
        else:
            fact["cache"] = "hit"
        fact.setdefault("cache", "built")
        fact["sha256"] = hit["files"][so]
        return {"ok": True, "key": key, "module": spec["name"], "so": str(final / so),
                "sha256": hit["files"][so], "is_python_module": spec["is_python_module"] is not False}

    def _verified(self, final: Path, so: str) -> dict[str, Any] | None:
        if not (final / "manifest.json").exists():
            return None
        manifest = _read_manifest(final, so)
        if manifest is None:  # altered or half-written: set aside, built again
            self._discard(final)
        return manifest

    def _discard(self, folder: Path) -> None:
        trash = self.root / "trash" / f"{folder.name}-{os.getpid()}-{time.monotonic_ns()}"
        trash.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(folder, trash)
        except OSError:
            return
        shutil.rmtree(trash, ignore_errors=True)

    def _staging(self, key: str) -> Path:
        (self.root / "staging").mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"{key[:16]}-", dir=self.root / "staging"))
        folder.chmod(0o755)  # readable by sandboxes of another uid once it is in place; writable by none
        for sub in ("build", "tmp"):
            (folder / sub).mkdir()
        return folder

    def _build_new(self, spec: dict[str, Any], key: str, final: Path, so: str, deadline: float,
                   fact: dict[str, Any]) -> dict[str, Any] | None:
        pch = self.pch(spec, deadline) if self.use_pch else None
        fact["pch"] = pch.parent.name[:12] if pch else None
        staging = self._staging(key)
        try:
            build_dir, tmp = staging / "build", staging / "tmp"

            def work() -> None:
                import torch.utils.cpp_extension as ext

                os.environ["TMPDIR"] = str(tmp)
                ext._import_module_from_library = lambda *a, **k: None  # built, never loaded here
                ext.remove_extension_h_precompiler_headers = lambda: None
                kwargs: dict[str, Any] = {k: spec[k] or None for k in ("cuda_sources", "extra_cflags",
                                                                       "extra_cuda_cflags", "extra_ldflags")}
                kwargs["extra_include_paths"] = ([str(pch)] if pch else []) + spec["extra_include_paths"]
                kwargs.update({k: spec[k] for k in _BOOL_ARGS if spec[k] is not None})
                ext.load_inline(spec["name"], list(spec["cpp_sources"]), functions=spec["functions"],
                                build_directory=str(build_dir), verbose=False, use_pch=False, **kwargs)

            ok, text = _confined(work, [str(build_dir), str(tmp)], deadline)
            if not ok:
                if text == "timeout":
                    raise BuildTimeout(f"the build of {spec['name']} ran past the compile phase's limit")
                fact["cache"] = "failed"
                if environment_failure(text) or text.startswith("refusing to build unconfined"):
                    fact["environment"] = True
                    self.environment_failure = text[-300:]
                    return {"ok": False, "kind": "environment", "text": text}
                return {"ok": False, "kind": "compile_error", "text": text}
            if not (staging / so).is_file():
                raise RuntimeError(f"the build of {spec['name']} produced no {so}")
            shutil.rmtree(tmp, ignore_errors=True)
            _write_manifest(staging, build_dir, {"key": key, "module": spec["name"],
                                                 "pch": fact["pch"], "spec_sha256": key})
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.exists():
                self._discard(final)
            try:
                os.rename(staging, final)
            except OSError:  # another checker put it there first: theirs is as good as ours
                pass
            return None
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)

    # -- the precompiled header ------------------------------------------------------------------------
    def pch(self, spec: dict[str, Any], deadline: float) -> Path | None:
        """The include folder holding a verified `torch/extension.h.gch` for these flags, or None.

        torch's own `use_pch` keeps one PCH inside its install and rebuilds it whenever the flags change;
        one folder per flag signature avoids both the thrash and the race, and gcc looks for
        `torch/extension.h.gch` in each include folder before the header itself."""
        import torch

        cmd = _pch_command(spec)
        if cmd is None:
            return None
        sig = hashlib.sha256(json.dumps([cmd, torch.__version__, _tool_version([cmd[0]])]).encode()).hexdigest()[:20]
        final = self.root / "pch" / sig
        gch = "include/torch/extension.h.gch"
        if (final / "manifest.json").exists() and _read_manifest(final, gch) is not None:
            return final / "include"
        lock = OwnedLock(self.root / "locks" / f"pch-{sig}.lock")
        got = lock.acquire(deadline - 60.0)
        try:
            if (final / "manifest.json").exists() and _read_manifest(final, gch) is not None:
                return final / "include"
            staging = self._staging(sig)
            try:
                out = staging / "include" / "torch"
                out.mkdir(parents=True)

                def work() -> None:
                    import subprocess

                    proc = subprocess.run([*cmd, "-o", str(out / "extension.h.gch")], capture_output=True,
                                          text=True, env={**os.environ, "TMPDIR": str(staging / "tmp")})
                    if proc.returncode != 0:
                        raise RuntimeError(proc.stderr[-2000:])

                ok, _text = _confined(work, [str(out), str(staging / "tmp")], deadline)
                if not ok or not (out / "extension.h.gch").is_file():
                    return None  # flags the header cannot be precompiled with: build without a PCH
                # gcc, having found the .gch here, looks for the header here too whenever it cannot use the
                # PCH (a second #include of extension.h): the header it finds is torch's own.
                os.symlink(cmd[3], out / "extension.h")
                shutil.rmtree(staging / "tmp", ignore_errors=True)
                _write_manifest(staging, staging / "include", {"command": cmd})
                if final.exists():
                    self._discard(final)
                final.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.rename(staging, final)
                except OSError:
                    pass
            finally:
                if staging.exists():
                    shutil.rmtree(staging, ignore_errors=True)
            return final / "include" if _read_manifest(final, gch) is not None else None
        finally:
            if got:
                lock.release()


__all__ = ["BuildService", "BuildTimeout", "NotShared", "OwnedLock", "environment_failure", "key_of", "normalize", "open_verified",
           "sha256_fd", "sha256_file"]
