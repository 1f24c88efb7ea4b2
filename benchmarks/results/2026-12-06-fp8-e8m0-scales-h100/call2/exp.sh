#!/usr/bin/env bash
# One-off device call: prefill A/B (main vs e8m0 + 32-bit index), decode bench switch A/B, FP8_QUICK.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu-out}
bash scripts/gpu/run_kernel_ab.sh 2 gpu_prefill_attention_bench test_cuda_prefill_attention > /dev/null 2>&1
source .gpu/bundle/env.sh
bin=.gpu/bundle/bin
runs0=$(mktemp -d)
for sw in 0 1; do
  MINIVLLM_DECODE_FP8_WIDE=$sw "$bin/gpu_decode_attention_bench" > "$runs0/d.txt" 2>&1
  { echo "== MINIVLLM_DECODE_FP8_WIDE=$sw"; cat "$runs0/d.txt"; } >> "$out/decode.log"
  grep -E "^\| [a-z0-9_]+ \| [0-9]+ \| [0-9]+ \| -2 " "$runs0/d.txt" | sed "s/^/wide=$sw: /" >> "$out/summary.txt"
done
MINIVLLM_DECODE_FP8_WIDE=1 "$bin/test_cuda_paged_attention" >> "$out/decode.log" 2>&1
echo "wide test_cuda_paged_attention exit $?" >> "$out/summary.txt"
FP8_QUICK=1 bash scripts/gpu/run_fp8.sh 1 > /dev/null 2>&1
# the switch on the engine: long and throughput with the fp8 cache
runs=$(mktemp -d)
python3 benchmarks/make_long_workload.py --out "$runs/long.json"
cfg=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$bin\"]" --set model.path=data/models/qwen3-0.6b --set 'cache.kv_cache_dtype="fp8_e4m3"')
export LD_LIBRARY_PATH="$bin/../lib:${LD_LIBRARY_PATH:-}"
MINIVLLM_DECODE_FP8_WIDE=1 "$bin/minivllm" bench throughput "${cfg[@]}" --set model.max_model_len=8704 --workload "$runs/long.json" --output "$runs/long-wide.json" >> "$out/engine.log" 2>&1
python3 scripts/gpu/bench_summary.py "wide fp8 long" "$runs/long-wide.json" >> "$out/summary.txt"
MINIVLLM_DECODE_FP8_WIDE=1 "$bin/minivllm" bench throughput "${cfg[@]}" --workload benchmarks/throughput-256.json --output "$runs/tp-wide.json" >> "$out/engine.log" 2>&1
python3 scripts/gpu/bench_summary.py "wide fp8 throughput" "$runs/tp-wide.json" >> "$out/summary.txt"
tar -C "$runs" -cJf "$out/wide-runs.tar.xz" .
cat "$out/summary.txt"
