#!/usr/bin/env bash
# Issue 36's GPU figures, ready for the GPU issue to run (prepared and checked on the CPU only: nothing here has
# run on a GPU yet). From the repository root, after `benchmarks/gpu_acceptance.sh prepare KERNELBENCH_CHECKOUT`
# (which makes .kb/KernelBench; the device call carries `.kb`):
#
#   benchmarks/gpu_issue36.sh memory     # peak device memory per KernelBench level-1 problem at its own size
#                                        # (budget: <= 2.5 x footprint + 1 GiB, no harness out_of_memory)
#   benchmarks/gpu_issue36.sh latency    # a built candidate to its verdict (<= 3 s), 16 new candidates of one
#                                        # task (<= 60 s), `python -m htam_agent.evaluation eval` wall (<= 10 s)
#
# Results under $OUT/issue36/ (or ./issue36-results when OUT is unset), one JSON line per case.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
PY=${PYTHON:-python3}
DEST=${OUT:-$ROOT/issue36-results}/issue36
mkdir -p "$DEST"
KB=${KB:-$ROOT/.kb/KernelBench}

case "${1:-}" in
  memory)
    # verdict_memory.py --set gpu: each problem at KernelBench's size (--no-fit), the fast-form honest candidate,
    # the device's used memory sampled from nvidia-smi every 0.1 s above its idle, and the host PSS beside it.
    "$PY" benchmarks/verdict_memory.py --set gpu --kb "$KB" --jsonl "$DEST/verdict_memory_gpu.jsonl"
    ;;
  latency)
    # 16 new candidates of one task, one built candidate re-evaluated (the "cached" figure is a built candidate to
    # its verdict with full checks), as the throughput benchmark measures them.
    timeout 900 "$PY" benchmarks/eval_throughput.py --backend cuda --n 16 --naive-sample 2 --skip stability \
      --out "$DEST/eval_throughput_cuda.json"
    # `htam eval` of a built candidate, wall time of the whole command (its parent's own imports included): built
    # once first, then timed.
    task=htam_agent/bundled_tasks/suite/elementwise_leaky_relu.py
    cand=htam_agent/bundled_tasks/candidates/elementwise_leaky_relu/cuda_fast.py
    "$PY" -m htam_agent.evaluation eval "$task" "$cand" --no-store > "$DEST/eval_build.json" 2>&1
    /usr/bin/time -f '%e s wall' -o "$DEST/eval_wall.txt" "$PY" -m htam_agent.evaluation eval "$task" "$cand" \
      --no-store > "$DEST/eval_timed.json" 2>&1
    cat "$DEST/eval_wall.txt"
    ;;
  *)
    echo "usage: $0 memory|latency" >&2
    exit 2
    ;;
esac
