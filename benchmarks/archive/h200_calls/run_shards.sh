#!/usr/bin/env bash
# One evaluator batch per GPU, each on its own shard of (task, candidate) pairs; verdict lines land in $OUT.
set -u
nvidia-smi -L
python -c "import torch, sys; print('torch', torch.__version__, 'python', sys.version.split()[0])"
git log --oneline -1 2>/dev/null || true
n=$(nvidia-smi -L | wc -l)
for i in $(seq 0 $((n - 1))); do
  CUDA_VISIBLE_DEVICES=$i HTAM_CACHE_DIR=/tmp/htamcache$i timeout "${LIMIT:-560}" \
    python -m htam_agent.evaluation batch --pairs gpu_batch/shard_$i.json --store /tmp/htamstore$i \
    --out "$OUT/verdicts_$i.jsonl" --jobs $(( $(nproc) / n )) > "$OUT/batch_$i.log" 2>&1 &
done
wait
tail -n 3 "$OUT"/batch_*.log
