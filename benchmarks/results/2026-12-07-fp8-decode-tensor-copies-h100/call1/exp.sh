#!/usr/bin/env bash
# 2026-12-07 call 1: fp8 decode q-after-first-issue (42a31ac re-applied) against fc31d14 on the
# decode bench (A B A B) and throughput-256 (fp8 A B A B, bf16 once); ncu of both kernels at 256 mixed rows.
set -uo pipefail
source scripts/gpu/prepare.sh
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
"$bin/test_cuda_paged_attention" > "$runs/t.log" 2>&1; echo "test_cuda_paged_attention exit $?" | tee -a "$out/summary.txt"
tail -3 "$runs/t.log" >> "$out/summary.txt"
mkdir -p .gpu/baseline && tar -C .gpu/baseline -xJf .gpu/baseline-bin.tar.xz
base=.gpu/baseline/bin
for i in 1 2; do
  LD_LIBRARY_PATH="$base/../lib:${LD_LIBRARY_PATH:-}" timeout 150 "$base/gpu_decode_attention_bench" > "$out/bench-base-$i.txt" 2>&1
  timeout 150 "$bin/gpu_decode_attention_bench" > "$out/bench-new-$i.txt" 2>&1
done
run() {
  local kv=$1 dir=$2 label=$3 r=$4
  local json="$runs/tp-$label-$r.json"
  env LD_LIBRARY_PATH="$dir/../lib:${LD_LIBRARY_PATH:-}" "$dir/minivllm" bench throughput \
    --config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$dir\"]" \
    --set model.path=data/models/qwen3-0.6b --set "cache.kv_cache_dtype=\"$kv\"" \
    --workload benchmarks/throughput-256.json --output "$json" >> "$runs/engine.log" 2>&1
  python3 scripts/gpu/bench_summary.py "$label throughput round $r" "$json" | tee -a "$out/summary.txt"
}
run auto "$bin" bf16 1
for r in 1 2; do run fp8_e4m3 "$base" base-fp8 $r; run fp8_e4m3 "$bin" new-fp8 $r; done
tail -20 "$runs/engine.log" > "$out/engine-tail.log"
timeout 200 scripts/gpu/run_decode_profile.sh "fp8_e4m3 256 256 -1" "bf16 256 256 -1" > /dev/null 2>&1
echo "profile exit $?" >> "$out/summary.txt"
