#!/usr/bin/env bash
# One-off device call (2026-12-06): the q-after-keys start (both kernels) against main cd783e5,
# and two-warp fp8 blocks (MINIVLLM_DECODE_FP8_TWO_WARPS 0 / 1 / 2).
set -uo pipefail
source "$(dirname "$0")/../scripts/gpu/prepare.sh"
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
mkdir -p .gpu/baseline && tar -C .gpu/baseline -xJf .gpu/baseline-bin.tar.xz
base=.gpu/baseline/bin
s=$out/summary.txt
for rule in 0 1 2; do
  MINIVLLM_DECODE_FP8_TWO_WARPS=$rule "$bin/test_cuda_paged_attention" > "$runs/t.log" 2>&1
  echo "test_cuda_paged_attention rule $rule exit $?" | tee -a "$s"
  tail -3 "$runs/t.log" >> "$out/tests.log"
done
"$bin/test_cuda_attention_inputs" > /dev/null 2>&1; echo "attention_inputs exit $?" >> "$s"
row() { grep -E "^\| [a-z0-9_]+ \| 256 \| (64|128|256) \| (512|1024|8192|0|-1) \||^\| [a-z0-9_]+ \| 256 \| (32|48|64) \| -2 \|" "$1" | sed "s/^/$2: /" >> "$s"; }
dec() {  # LABEL CMD...
  local label=$1; shift
  "$@" > "$runs/d.txt" 2>&1
  { echo "== $label"; cat "$runs/d.txt"; } >> "$out/decode.log"
  row "$runs/d.txt" "$label"
}
dec base env LD_LIBRARY_PATH="$base/../lib:${LD_LIBRARY_PATH:-}" "$base/gpu_decode_attention_bench"
for rule in 0 1 2; do dec "new$rule" env MINIVLLM_DECODE_FP8_TWO_WARPS=$rule "$bin/gpu_decode_attention_bench"; done
python3 benchmarks/make_long_workload.py --out "$runs/long.json"
eng() {  # LABEL DIR KV RULE KIND
  local label=$1 dir=$2 kv=$3 rule=$4 kind=$5
  local cfg=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$dir\"]"
             --set model.path=data/models/qwen3-0.6b --set "cache.kv_cache_dtype=\"$kv\"")
  local json="$runs/$label-$kind.json"
  if [ "$kind" = long ]; then cfg+=(--set model.max_model_len=8704 --workload "$runs/long.json");
  else cfg+=(--workload benchmarks/throughput-256.json); fi
  env LD_LIBRARY_PATH="$dir/../lib:${LD_LIBRARY_PATH:-}" MINIVLLM_DECODE_FP8_TWO_WARPS=$rule \
    "$dir/minivllm" bench throughput "${cfg[@]}" --output "$json" >> "$out/engine.log" 2>&1
  python3 scripts/gpu/bench_summary.py "$label $kind" "$json" | tee -a "$s"
}
for kind in throughput long; do
  eng base-bf16 "$base" auto 0 $kind
  eng new-bf16 "$bin" auto 0 $kind
  eng base-fp8 "$base" fp8_e4m3 0 $kind
  eng new0-fp8 "$bin" fp8_e4m3 0 $kind
  eng new1-fp8 "$bin" fp8_e4m3 1 $kind
  eng new2-fp8 "$bin" fp8_e4m3 2 $kind
done
tar -C "$runs" --exclude long.json -cJf "$out/runs.tar.xz" .
