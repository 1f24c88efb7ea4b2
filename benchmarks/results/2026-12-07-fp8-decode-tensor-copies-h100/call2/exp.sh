#!/usr/bin/env bash
# 2026-12-07 call 2: fp8 decode with tensor copies (thread 0 queues a block's 64-key step; TMA +
# mbarriers) against fc31d14 (base) and fc31d14 + q-after-first-issue (q): decode bench
# base/q/tma x2, throughput-256 fp8 base/q/tma x2 and bf16 once, after test_cuda_paged_attention.
set -uo pipefail
source scripts/gpu/prepare.sh
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
timeout 180 "$bin/test_cuda_paged_attention" > "$out/tests.txt" 2>&1; echo "test_cuda_paged_attention exit $?" | tee -a "$out/summary.txt"
grep -E "FAILED|PASSED" "$out/tests.txt" | tail -5 | tee -a "$out/summary.txt"
mkdir -p .gpu/baseline .gpu/qvariant
tar -C .gpu/baseline -xJf .gpu/baseline-bin.tar.xz; tar -C .gpu/qvariant -xJf .gpu/qvariant-bin.tar.xz
declare -A dirs=([base]=.gpu/baseline/bin [q]=.gpu/qvariant/bin [tma]=$bin)
for i in 1 2; do
  for v in base q tma; do
    d=${dirs[$v]}
    echo "=== $v round $i" >> "$out/bench.txt"
    LD_LIBRARY_PATH="$d/../lib:${LD_LIBRARY_PATH:-}" timeout 150 "$d/gpu_decode_attention_bench" >> "$out/bench.txt" 2>&1
    echo "=== $v round $i exit $?" >> "$out/bench.txt"
  done
done
run() {
  local kv=$1 v=$2 r=$3 d=${dirs[$2]}
  local json="$runs/tp-$v-$kv-$r.json"
  env LD_LIBRARY_PATH="$d/../lib:${LD_LIBRARY_PATH:-}" timeout 120 "$d/minivllm" bench throughput \
    --config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$d\"]" \
    --set model.path=data/models/qwen3-0.6b --set "cache.kv_cache_dtype=\"$kv\"" \
    --workload benchmarks/throughput-256.json --output "$json" >> "$runs/engine.log" 2>&1
  python3 scripts/gpu/bench_summary.py "$v $kv throughput round $r" "$json" | tee -a "$out/summary.txt"
}
run auto base 1
for r in 1 2; do for v in base q tma; do run fp8_e4m3 $v $r; done; done
tail -30 "$runs/engine.log" > "$out/engine-tail.log"
