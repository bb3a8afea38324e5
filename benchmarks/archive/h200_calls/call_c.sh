#!/usr/bin/env bash
# Third H200 call: the 14 exemplar cuda candidates the second call had no time for (GPU 0), and the default
# tier's cost on the honest Triton candidates (GPU 1).
set -u
(
  CUDA_VISIBLE_DEVICES=0 HTAM_CACHE_DIR=/tmp/htamcache0 timeout 250 python -m htam_agent.evaluation batch \
    --pairs gpu_batch/final_missing.json --store /tmp/htamstore0 --out "$OUT/exemplar_cuda_2.jsonl" --jobs 16 \
    > "$OUT/exemplar_cuda_2.log" 2>&1
) &
(
  CUDA_VISIBLE_DEVICES=1 HTAM_CACHE_DIR=/tmp/htamcache1 timeout 250 python benchmarks/anticheat_cost.py \
    --backend triton --repeats 2 --out "$OUT/anticheat_cost_triton.json" > "$OUT/anticheat_cost_triton.log" 2>&1
) &
wait
tail -n 4 "$OUT"/*.log
