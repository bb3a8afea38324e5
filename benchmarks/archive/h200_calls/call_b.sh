#!/usr/bin/env bash
# Final H200 call: every exemplar cuda candidate and the scripted replies under the current evaluator (eager and
# torch.compile baselines reused from the first call: they do not depend on the checks), then the GPU cheat
# catalogue (GPU 0) and the honest GPU candidates (GPU 1). Outputs land in $OUT.
set -u
nvidia-smi -L
end=$(( $(date +%s) + ${LIMIT:-570} ))
left() { echo $(( end - $(date +%s) )); }
for i in 0 1; do
  python -c "from htam_agent.evaluation.parent.store import VerdictStore as S; print('baselines', S('/tmp/htamstore$i').import_jsonl('gpu_batch/baselines_part1.jsonl'))"
done
(
  export CUDA_VISIBLE_DEVICES=0 HTAM_CACHE_DIR=/tmp/htamcache0
  timeout $(( $(left) - 150 )) python -m htam_agent.evaluation batch --pairs gpu_batch/final_0.json \
      --store /tmp/htamstore0 --out "$OUT/exemplar_cuda_0.jsonl" --jobs 16 > "$OUT/exemplar_cuda_0.log" 2>&1
  timeout $(( $(left) - 3 )) python tests/cheats/test_cheats_gpu.py > "$OUT/cheats_gpu.log" 2>&1
) &
(
  export CUDA_VISIBLE_DEVICES=1 HTAM_CACHE_DIR=/tmp/htamcache1
  timeout $(( $(left) - 170 )) python -m htam_agent.evaluation batch --pairs gpu_batch/final_1.json \
      --store /tmp/htamstore1 --out "$OUT/exemplar_cuda_1.jsonl" --jobs 16 > "$OUT/exemplar_cuda_1.log" 2>&1
  for b in triton cuda; do
    timeout $(( $(left) - 3 )) python -m htam_agent.evaluation batch --tasks htam_agent/bundled_tasks/suite \
        --candidates htam_agent/bundled_tasks/candidates --backend $b --store /tmp/htamstore1 \
        --out "$OUT/honest_$b.jsonl" --jobs 16 > "$OUT/honest_$b.log" 2>&1
  done
) &
wait
tail -n 2 "$OUT"/*.log
