#!/usr/bin/env bash
# Fair timing on a GPU host (issue 25): the reference's own computation, wrapped as a `bare`-tier candidate
# (benchmarks/fair_timing.py), against eager PyTorch at KernelBench's own sizes, with the eager baseline timed
# on its own (the GPU's default) and beside the candidate (--pairing on). Budget: within 2% of 1.0.
#
#   benchmarks/gpu_fair_timing.sh [TASK.py ...]    # from the repository root, on the GPU host
#
# Default tasks: three KernelBench problems the issue's regression was reported on (eager 0.4 to 8.4 ms), read
# from .kb/KernelBench/level1/ (copied from a KernelBench checkout by `benchmarks/gpu_acceptance.sh prepare`,
# never committed; the device tool carries .kb). Results: $OUT/fair_<task>_<pairing>.jsonl (OUT defaults to
# /tmp/htam-fair). Each task and pairing has its own limit (LIMIT seconds, default 150). TOUCH=1: the
# candidate's forward also launches an empty kernel (as the runs of 2026-12-04 did; fair_timing.py --touch).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/htam-fair}
mkdir -p "$OUT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # the checkout's htam_agent (nothing is installed there)
export HTAM_BUILD_DIR=${HTAM_BUILD_DIR:-/tmp/htam-fair-builds}
tasks=("$@")
if [ ${#tasks[@]} -eq 0 ]; then
  tasks=(.kb/KernelBench/level1/95_CrossEntropyLoss.py .kb/KernelBench/level1/40_LayerNorm.py
         .kb/KernelBench/level1/88_MinGPTNewGelu.py)
fi
START=$(date +%s)
for t in "${tasks[@]}"; do
  [ -f "$t" ] || { echo "$t: no such task file (run benchmarks/gpu_acceptance.sh prepare KERNELBENCH_CHECKOUT)"; exit 2; }
  for pairing in off on; do
    name=$(basename "$t" .py)
    echo "[+$(( $(date +%s) - START ))s] $name, pairing $pairing"
    timeout "${LIMIT:-150}" "$PY" benchmarks/fair_timing.py --task "$t" --backend cuda --repeats "${REPEATS:-5}" \
      --pairing "$pairing" --build-root "$HTAM_BUILD_DIR" ${TOUCH:+--touch} | tee "$OUT/fair_${name}_${pairing}.jsonl" | tail -1
  done
done
echo "[+$(( $(date +%s) - START ))s] done"
