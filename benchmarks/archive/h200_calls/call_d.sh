#!/usr/bin/env bash
# Session 3 (issue 6 follow-up): every exemplar Triton candidate through the default-tier evaluator, one shard
# per GPU, eager baseline only (torch.compile times of the same tasks come from call_b's cuda verdicts).
# Inputs made here first: htam exemplar write --suite --backend triton --out gpu_batch/tri, the pairs split by
# task into gpu_batch/tri_shard_<i>.json with repository-relative paths.
set -u
nvidia-smi -L
python -c "import torch, triton, sys; print('torch', torch.__version__, 'triton', triton.__version__, 'python', sys.version.split()[0])"
n=$(nvidia-smi -L | wc -l)
for i in $(seq 0 $((n - 1))); do
  CUDA_VISIBLE_DEVICES=$i HTAM_CACHE_DIR=/tmp/htamcache$i timeout "${LIMIT:-540}" \
    python -m htam_agent.evaluation batch --pairs gpu_batch/tri_shard_$i.json --store /tmp/htamstore$i \
    --baselines eager --out "$OUT/triton_verdicts_$i.jsonl" --jobs $(( $(nproc) / n )) > "$OUT/batch_$i.log" 2>&1 &
done
wait
tail -n 3 "$OUT"/batch_*.log
wc -l "$OUT"/triton_verdicts_*.jsonl
