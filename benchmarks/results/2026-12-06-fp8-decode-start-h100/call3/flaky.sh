#!/usr/bin/env bash
# One-off: PrefillAttentionKernel.FastPathMatchesReference failed once in call 2; repeat it with
# fresh seeds and keep every failing seed's output.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
tar -C .gpu/bundle -xJf .gpu/bin.tar.xz
source .gpu/bundle/env.sh
bin=.gpu/bundle/bin
fails=0
for i in $(seq 1 30); do
  "$bin/test_cuda_prefill_attention" --gtest_filter='PrefillAttentionKernel.FastPathMatchesReference' > /tmp/f.log 2>&1
  rc=$?
  seed=$(grep -m1 "^seed" /tmp/f.log)
  echo "run $i rc $rc $seed" >> "$out/flaky.txt"
  if [ $rc -ne 0 ]; then fails=$((fails+1)); { echo "=== run $i"; cat /tmp/f.log; } >> "$out/failures.txt"; fi
done
echo "failures $fails of 30" | tee -a "$out/flaky.txt"
