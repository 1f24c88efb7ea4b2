#!/usr/bin/env bash
# One-off device call (2026-12-06, call 2): run_fp8.sh 1 against main cd783e5 (the fp8 kernel
# reads q after its first two tiles), then MINIVLLM_DECODE_FP8_TWO_WAVES=1 (fp8 batches of half to
# one wave balanced over two waves) on the decode bench and the long workload.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu-out}
bash scripts/gpu/run_fp8.sh 1 > "$out/run_fp8.log" 2>&1
source .gpu/bundle/env.sh
bin=.gpu/bundle/bin
s=$out/summary.txt
runs=$(mktemp -d)
MINIVLLM_DECODE_FP8_TWO_WAVES=1 "$bin/test_cuda_paged_attention" > "$runs/t.log" 2>&1
echo "two waves: test_cuda_paged_attention exit $?" | tee -a "$s"
MINIVLLM_DECODE_FP8_TWO_WAVES=1 "$bin/gpu_decode_attention_bench" > "$out/decode-two-waves.txt" 2>&1
grep -E "^\| fp8_e4m3 \| [0-9]+ \| [0-9]+ \| -2 " "$out/decode-two-waves.txt" | sed "s/^/two waves: /" >> "$s"
grep -E "^\| fp8_e4m3 \| [0-9]+ \| [0-9]+ \| -2 " "$out/decode-attention.txt" | sed "s/^/off: /" >> "$s"
python3 benchmarks/make_long_workload.py --out "$runs/long.json"
cfg=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$bin\"]" --set model.path=data/models/qwen3-0.6b --set 'cache.kv_cache_dtype="fp8_e4m3"' --set model.max_model_len=8704 --workload "$runs/long.json")
for k in 1 0; do
  MINIVLLM_DECODE_FP8_TWO_WAVES=$k "$bin/minivllm" bench throughput "${cfg[@]}" --output "$runs/long-$k.json" >> "$out/engine-two-waves.log" 2>&1
  python3 scripts/gpu/bench_summary.py "two waves=$k fp8 long" "$runs/long-$k.json" | tee -a "$s"
done
