#!/usr/bin/env bash
# 2026-12-07 call 3: fp8 decode tensor copies with a 3-stage block ring (tma3, this build) against
# the 2-stage one (tma2, call 2's build) and fc31d14 + q-after-first-issue (q): decode bench x2,
# throughput-256 fp8 x2, c=1 latency once each, after test_cuda_paged_attention.
set -uo pipefail
source scripts/gpu/prepare.sh
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
timeout 180 "$bin/test_cuda_paged_attention" > "$out/tests.txt" 2>&1; echo "test_cuda_paged_attention exit $?" | tee -a "$out/summary.txt"
grep -E "FAILED|PASSED" "$out/tests.txt" | tail -5 | tee -a "$out/summary.txt"
mkdir -p .gpu/qvariant .gpu/tma2
tar -C .gpu/qvariant -xJf .gpu/qvariant-bin.tar.xz; tar -C .gpu/tma2 -xJf .gpu/tma2-bin.tar.xz
declare -A dirs=([q]=.gpu/qvariant/bin [tma2]=.gpu/tma2/bin [tma3]=$bin)
lib=.gpu/qvariant/lib
for i in 1 2; do
  for v in q tma2 tma3; do
    d=${dirs[$v]}
    echo "=== $v round $i" >> "$out/bench.txt"
    LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" timeout 150 "$d/gpu_decode_attention_bench" >> "$out/bench.txt" 2>&1
    echo "=== $v round $i exit $?" >> "$out/bench.txt"
  done
done
run() {
  local kind=$1 v=$2 r=$3 d=${dirs[$2]}
  local json="$runs/$kind-$v-$r.json"
  local cmd=(env LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" timeout 120 "$d/minivllm" bench)
  local cfg=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$d\"]"
             --set model.path=data/models/qwen3-0.6b --set 'cache.kv_cache_dtype="fp8_e4m3"')
  if [ "$kind" = throughput ]; then
    "${cmd[@]}" throughput "${cfg[@]}" --workload benchmarks/throughput-256.json --output "$json" >> "$runs/engine.log" 2>&1
  else
    "${cmd[@]}" latency "${cfg[@]}" --concurrency 1 --output "$json" >> "$runs/engine.log" 2>&1
  fi
  python3 scripts/gpu/bench_summary.py "$v fp8 $kind round $r" "$json" | tee -a "$out/summary.txt"
}
for r in 1 2; do for v in q tma2 tma3; do run throughput $v $r; done; done
for v in q tma2 tma3; do run latency $v 1; done
tail -30 "$runs/engine.log" > "$out/engine-tail.log"
