#!/usr/bin/env bash
# Issue 36's GPU figures, ready for the GPU issue to run (prepared and checked on the CPU only: nothing here has
# run on a GPU yet). From the repository root, after `benchmarks/gpu_acceptance.sh prepare KERNELBENCH_CHECKOUT`
# (which makes .kb/KernelBench; the device call carries `.kb`):
#
#   benchmarks/gpu_issue36.sh memory     # peak device memory per KernelBench level-1 problem at its own size
#                                        # (budget: <= 2.5 x footprint + 1 GiB, no harness out_of_memory)
#   benchmarks/gpu_issue36.sh latency    # a built candidate to its verdict (<= 3 s), 16 new candidates of one
#                                        # task (<= 60 s), `python -m htam_agent.evaluation eval` wall (<= 10 s),
#                                        # with the launcher and without (benchmarks/gpu_latency.py); needs no .kb
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
    # A built candidate to its verdict (<= 3 s), `python -m htam_agent.evaluation eval` of a built candidate, whole
    # command (<= 10 s), 16 new candidates of one task (<= 60 s): each with the launcher (forked checkers, CUDA
    # initialised after the job arrives) and the first two also with HTAM_LAUNCHER=0 (fresh interpreters, the GPU
    # path before issue 36), on this machine in one run. Prints one JSON line per measurement, then the medians.
    # BATCH_MODES=launcher,fresh adds the old path's batch of 16 (about 3 more minutes).
    timeout 470 "$PY" benchmarks/gpu_latency.py --backend cuda --n 16 --repeats 2 \
      --batch-modes "${BATCH_MODES:-launcher}" --out "$DEST/gpu_latency.json"
    ;;
  *)
    echo "usage: $0 memory|latency" >&2
    exit 2
    ;;
esac
