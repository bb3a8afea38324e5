#!/bin/bash
# The README's command 1, three times, each from a fresh clone, venv and HOME (the quick start budget: median of 3).
for i in 1 2 3; do
  rm -rf /tmp/qs$i /tmp/qs${i}home /tmp/qs${i}venv; mkdir -p /tmp/qs${i}home
  git clone -q /work/main /tmp/qs$i && cd /tmp/qs$i
  python -m venv /tmp/qs${i}venv && . /tmp/qs${i}venv/bin/activate
  export HOME=/tmp/qs${i}home
  t0=$(date +%s)
  pip install -q "torch==2.13.0" -e . && htam optimize htam_agent/bundled_tasks/suite/norm_rmsnorm.py --backend cpp --steps 3
  rc=$?
  echo "RUN $i rc=$rc wall $(( $(date +%s) - t0 )) s commit $(git rev-parse --short HEAD) at $(date -u +%H:%M:%S)"
  deactivate
done
