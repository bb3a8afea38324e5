#!/usr/bin/env bash
# GPU acceptance (issue 24): every GPU figure of the fast CUDA loop (issue 21), the KernelBench set, the bundled
# candidates and the GPU cheat catalogue, the trust boundary's cost and the evaluator's throughput.
#
#   benchmarks/gpu_acceptance.sh prepare KERNELBENCH_CHECKOUT    # here, on the dev machine (needs git)
#   benchmarks/gpu_acceptance.sh PART [PART ...]                 # on the GPU host, from the repository root
#
# PART: fastloop kernelbench bundled boundary_cost throughput, or `all` (every part, in that order);
# kernelbench_default (the level-1 activations at KernelBench's own size, ~20 s a verdict) is separate.
# Each part is its own subcommand so that a call cut at its limit can be continued with the parts it did not
# reach; every step has its own time limit (LIMIT_<PART>, seconds) and prints progress as it goes.
#
# `prepare` makes the two inputs the repository may not hold, as ignored folders the device tool carries:
#   .kb/KernelBench/level{1,2}/  KernelBench's problem files (from a checkout; never committed)
#   .oldtree/htam_agent/         the evaluator before the trust boundary (git archive 1aa6e87), for boundary_cost
# and prints the `carry` list (the call carries `.kb` and `.oldtree`).
#
# On the GPU host it needs python3 with torch (CUDA), numpy, Triton, nvcc and ninja; it imports only
# htam_agent.evaluation, htam_agent.bench.kernelbench_checks, htam_agent.bench.launcher_marker (which expands
# the fast-form fixtures' launcher line) and the benchmarks scripts (no pydantic, langgraph or chroma). Results go to $OUT/<part>/ and are packed at exit into $OUT/<part>.tgz (the device tool brings
# back at most 8 files), next to $OUT/progress.log.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
PY=${PYTHON:-python3}
START=$(date +%s)
log() { echo "[$(date -u +%H:%M:%S) +$(( $(date +%s) - START ))s] $*"; }

if [ "${1:-}" = "prepare" ]; then
  src=${2:?usage: gpu_acceptance.sh prepare KERNELBENCH_CHECKOUT}
  [ -d "$src/KernelBench/level1" ] && src="$src/KernelBench"
  [ -d "$src/level1" ] || { echo "$src: no level1/ folder (give a KernelBench checkout)"; exit 2; }
  mkdir -p .git/info && for d in /.kb/ /.oldtree/; do grep -qxF "$d" .git/info/exclude 2>/dev/null || echo "$d" >> .git/info/exclude; done
  rm -rf .kb .oldtree && mkdir -p .kb/KernelBench .oldtree
  cp -r "$src/level1" "$src/level2" .kb/KernelBench/
  git archive 1aa6e87 htam_agent | tar -x -C .oldtree
  du -sh .kb .oldtree
  echo 'carry: [".kb", ".oldtree"]'
  exit 0
fi

OUT=${OUT:-/tmp/gpu_acceptance_out}
mkdir -p "$OUT"
WORK=${WORK:-/tmp/gpu_acceptance_work}
mkdir -p "$WORK"
KB=${KB:-$ROOT/.kb/KernelBench}
OLD_ROOT=${OLD_ROOT:-$ROOT/.oldtree}
export PYTHONUNBUFFERED=1 PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
# The build cache and the verdict store stay in /tmp, so that a second call on the still-warm machine reuses them.
export HTAM_CACHE_DIR=${HTAM_CACHE_DIR:-/tmp/htam_acceptance_cache}
STORE=${STORE:-/tmp/htam_acceptance_store}
exec > >(tee -a "$OUT/progress.log") 2>&1

pack() {
  for d in "$OUT"/*/; do
    [ -d "$d" ] || continue
    name=$(basename "$d")
    tar -czf "$OUT/$name.tgz" -C "$OUT" "$name" && rm -rf "$OUT/$name"
  done
  log "packed: $(cd "$OUT" && ls | tr '\n' ' ')"
}
trap pack EXIT

# step NAME LIMIT_S CMD...: one command under its own limit, its output in $OUT/<part>/NAME.log, its end echoed.
# DEADLINE_S (default 530): the whole invocation's budget; no step runs past it, and one with under 20 s left is
# skipped (said so), so the pack at exit always happens inside the device call.
END=$(( START + ${DEADLINE_S:-530} ))
step() {
  local name=$1 limit=$2
  shift 2
  local left=$(( END - $(date +%s) - 5 ))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -lt 20 ]; then
    log "-- $PART/$name SKIPPED: ${left}s left of DEADLINE_S"
    echo "$name skipped (deadline)" >> "$OUT/$PART/steps.txt"
    return 0
  fi
  log "-- $PART/$name (limit ${limit}s): $*"
  local t0=$(date +%s.%N)
  timeout "$limit" "$@" > "$OUT/$PART/$name.log" 2>&1
  local rc=$?
  local dt=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
  echo "$name rc=$rc wall_s=$dt" >> "$OUT/$PART/steps.txt"
  log "   $name: rc=$rc in ${dt}s$([ $rc = 124 ] && echo ' (CUT at its limit)')"
  tail -n "${TAIL:-6}" "$OUT/$PART/$name.log" | sed 's/^/   | /'
  return 0
}

env_report() {
  nvidia-smi -L
  "$PY" - <<'EOF'
import inspect, sys, torch, torch.utils.cpp_extension as ext
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      "gpu", torch.cuda.get_device_name() if torch.cuda.is_available() else None)
print("load_inline has no_implicit_headers:", "no_implicit_headers" in inspect.signature(ext.load_inline).parameters)
try:
    import triton
    print("triton", triton.__version__)
except Exception as exc:
    print("triton missing:", exc)
EOF
  nvcc --version | tail -n 2
}

# 16 new fast-form candidates of one task (the KernelBench ReLU, small size): the same kernel at 16 launch
# shapes, each source distinct, so every one is a cold build.
make_sixteen() {
  local dir=$WORK/sixteen
  rm -rf "$dir" && mkdir -p "$dir"
  "$PY" - "$dir" "$KB" <<'EOF'
import json, sys
from pathlib import Path
from htam_agent.bench.launcher_marker import source_of
out, kb = Path(sys.argv[1]), Path(sys.argv[2])
src = source_of(Path("tests/cheats/kernelbench/fast/honest/l1_19_relu.py"))
pairs = []
for i, (threads, cap) in enumerate([(t, c) for t in (128, 256, 512, 1024) for c in (1024, 4096, 8192, 16384)]):
    text = src.replace("blocks = min((n + 1023) // 1024, 8192)", f"blocks = min((n + {threads * 4 - 1}) // {threads * 4}, {cap})")
    text = text.replace("block=(256, 1, 1)", f"block=({threads}, 1, 1)")
    anchor = 'extern "C" __global__ void relu_kernel('
    text = text.replace(anchor, f"// variant {i}: {threads} threads, at most {cap} blocks\n{anchor}", 1)
    assert text != src
    path = out / f"relu_fast_v{i:02d}.py"
    path.write_text(text)
    pairs.append({"task": str(kb / "level1" / "19_ReLU.py"), "candidate": str(path)})
(out / "pairs.json").write_text(json.dumps(pairs, indent=1))
print(len(pairs), "candidates in", out)
EOF
}

part_fastloop() {
  env_report > "$OUT/$PART/env.log" 2>&1; cat "$OUT/$PART/env.log"
  step cuda_loop 240 "$PY" benchmarks/cuda_loop.py --repeats 3 --usual-repeats ${USUAL_REPEATS:-1} --build-root "$WORK/cuda_loop" \
    --out "$OUT/$PART/cuda_loop.json"
  local relu=$KB/level1/19_ReLU.py fast=tests/cheats/kernelbench/fast/honest/l1_19_relu.py
  local cold=$WORK/cold_relu_fast.py
  "$PY" -m htam_agent.bench.launcher_marker "$fast" \
    | sed 's|^extern "C" __global__ void relu_kernel(|// cold single '"$(date +%s)"'\n&|' > "$cold"
  step single_cold 150 "$PY" -m htam_agent.evaluation eval "$relu" "$cold" --backend cuda --size small --no-store --json
  step single_built 150 "$PY" -m htam_agent.evaluation eval "$relu" "$cold" --backend cuda --size small --no-store --json
  make_sixteen > "$OUT/$PART/sixteen_made.log" 2>&1
  step sixteen_batch 300 "$PY" -m htam_agent.evaluation batch --pairs "$WORK/sixteen/pairs.json" --backend cuda \
    --size small --store "$STORE" --out "$OUT/$PART/sixteen_verdicts.jsonl"
}

part_kernelbench() {
  [ -d "$KB/level1" ] || { log "no KernelBench files at $KB: run 'gpu_acceptance.sh prepare CHECKOUT' here and carry .kb"; return 0; }
  # three batches: the fast-form rewrites, the cheats (their own folder), the usual-form honest set (the
  # regression set); KB_SETS orders them (a call cut short continues with the rest). A batch cut at its limit
  # leaves its verdicts so far in verdicts.jsonl: judge them with kernelbench_checks.py --judge-only.
  mkdir -p "$WORK/kb_cheats" "$WORK/kb_usual"
  ln -sfn "$ROOT/tests/cheats/kernelbench/cheats" "$WORK/kb_cheats/cheats"
  ln -sfn "$ROOT/tests/cheats/kernelbench/honest" "$WORK/kb_usual/honest"
  local set dir
  for set in ${KB_SETS:-fast cheats usual}; do
    case $set in
      fast) dir=tests/cheats/kernelbench/fast ;;
      cheats) dir=$WORK/kb_cheats ;;
      usual) dir=$WORK/kb_usual ;;
      *) log "KB_SETS: unknown set '$set' (fast cheats usual)"; continue ;;
    esac
    step "kb_${set}_small" "${LIMIT_KB:-600}" "$PY" benchmarks/kernelbench_checks.py "$KB" \
      --out "$OUT/$PART/${set}_small" --size small --candidates-dir "$dir" ${KB_ONLY:+--only "$KB_ONLY"}
  done
}

part_kernelbench_default() {
  [ -d "$KB/level1" ] || { log "no KernelBench files at $KB"; return 0; }
  for set in fast usual; do
    local dir=tests/cheats/kernelbench
    [ $set = fast ] && dir=tests/cheats/kernelbench/fast
    for p in 19_relu 20_leakyrelu 21_sigmoid 22_tanh 25_swish 26_gelu 27_selu 28_hardsigmoid 29_softplus 30_softsign \
             31_elu 32_hardtanh 88_mingptnewgelu; do
      step "default_${set}_$p" "${LIMIT_KB_DEFAULT:-90}" "$PY" benchmarks/kernelbench_checks.py "$KB" \
        --out "$OUT/$PART/default_${set}_$p" --candidates-dir "$dir" --only "l1_$p"
    done
  done
}

part_bundled() {
  for b in cuda triton; do
    step "honest_$b" "${LIMIT_BUNDLED:-300}" "$PY" -m htam_agent.evaluation batch --tasks htam_agent/bundled_tasks/suite \
      --candidates htam_agent/bundled_tasks/candidates --backend $b --store "$STORE" --out "$OUT/$PART/honest_$b.jsonl"
  done
  TAIL=40 step cheats_gpu "${LIMIT_CHEATS:-420}" "$PY" tests/cheats/test_cheats_gpu.py
}

part_boundary_cost() {
  [ -d "$OLD_ROOT/htam_agent" ] || { log "no old tree at $OLD_ROOT: run 'gpu_acceptance.sh prepare CHECKOUT' here and carry .oldtree"; return 0; }
  step boundary_cost "${LIMIT_BOUNDARY:-420}" "$PY" benchmarks/archive/boundary_cost.py --old-root "$OLD_ROOT" \
    --backend cuda --rounds 1 --repeats 2 --out "$OUT/$PART/boundary_cost_cuda.json"
}

part_throughput() {
  step eval_throughput "${LIMIT_THROUGHPUT:-480}" "$PY" benchmarks/eval_throughput.py --backend cuda --n 16 \
    --naive-sample 4 --skip stability --out "$OUT/$PART/eval_throughput_cuda.json"
}

parts=("$@")
[ ${#parts[@]} -eq 0 ] && { sed -n '2,16p' "$0"; exit 2; }
[ "${parts[0]}" = all ] && parts=(fastloop kernelbench bundled boundary_cost throughput)
log "gpu_acceptance: parts ${parts[*]}; OUT=$OUT HTAM_CACHE_DIR=$HTAM_CACHE_DIR KB=$KB"
for PART in "${parts[@]}"; do
  if ! declare -F "part_$PART" > /dev/null; then
    log "unknown part '$PART' (fastloop kernelbench kernelbench_default bundled boundary_cost throughput all)"
    exit 2
  fi
  mkdir -p "$OUT/$PART"
  log "== part $PART"
  "part_$PART"
  log "== part $PART done"
done
