#!/usr/bin/env bash
# 2026-12-06 (ran 23:55 UTC on an H200): run_fp8.sh 2 with the baseline (main before the
# prefill conversion change), then gpu_prefill_attention_bench A (baseline) / B alternated twice
# into prefill-attention.txt.
set -uo pipefail
bash scripts/gpu/run_fp8.sh 2
out=${OUT:-/tmp/gpu-out}
for r in 1 2; do
  for ab in A B; do
    dir=.gpu/bundle/bin; [ $ab = A ] && dir=.gpu/baseline/bin
    echo "== $ab round $r" >> "$out/prefill-attention.txt"
    LD_LIBRARY_PATH="$dir/../lib:${LD_LIBRARY_PATH:-}" "$dir/gpu_prefill_attention_bench" \
      >> "$out/prefill-attention.txt" 2>&1
    echo "== exit $?" >> "$out/prefill-attention.txt"
  done
done
grep -E "^==|^\| (8k|16k|4k|ragged)" "$out/prefill-attention.txt"
