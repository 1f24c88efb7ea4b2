#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: the FP8 KV cache's checks and figures in one
# device call. $OUT gets tests.log (kernel tests, the CUDA goldens with their fp8 figures, the
# engine on the GPU), decode-attention.txt, and engine.log with the bf16 ("auto") and fp8_e4m3
# caches alternated on throughput-256, single-stream latency and the long workload
# (benchmarks/make_long_workload.py), Qwen3-0.6B shape (configs/qwen3-0.6b-h200.toml), then the
# bf16 cache's TPOT at concurrency 8 and TTFT of 128- and 1,024-token prompts alone; summary.txt;
# each run's JSON in runs.tar.xz. With a baseline from scripts/gpu/bundle_baseline.sh (its
# launcher, plugins and benchmarks/gpu_decode_attention_bench), the baseline's fp8 runs and
# decode-attention bench alternate with this build's (the "before" of a kernel change).
# FP8_QUICK=1 keeps a short call to the kernel tests and throughput-256 and the long workload.
#   scripts/gpu/run_fp8.sh [ROUNDS]   (default 2)
set -uo pipefail
rounds=${1:-2}
quick=${FP8_QUICK:-0}
tests=(test_cuda_attention_inputs test_cuda_paged_attention test_cuda_prefill_attention)
kinds=(throughput long)
if [ "$quick" != 1 ]; then
  tests+=(test_cuda_tile_gemm test_cuda_golden test_cuda_engine)
  kinds=(throughput latency long)
fi
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
{
  for t in "${tests[@]}"; do
    echo "== $t"
    "$bin/$t"
    echo "== $t exit $?"
  done
} > "$out/tests.log" 2>&1
grep -E "^== .* exit|\[ cuda golden|FAILED" "$out/tests.log" | tee -a "$out/summary.txt"
baseline=
if [ -f .gpu/baseline-bin.tar.xz ]; then
  mkdir -p .gpu/baseline && tar -C .gpu/baseline -xJf .gpu/baseline-bin.tar.xz
  baseline=.gpu/baseline/bin
  echo "baseline $(cat .gpu/baseline-commit)" | tee -a "$out/summary.txt"
fi
if [ "$quick" != 1 ]; then
  if [ -n "$baseline" ]; then
    LD_LIBRARY_PATH="$baseline/../lib:${LD_LIBRARY_PATH:-}" "$baseline/gpu_decode_attention_bench" \
      > "$out/decode-attention-baseline.txt" 2>&1
    grep -E "^\| [a-z0-9_]+ \| 256 \| 256 \| 8192" "$out/decode-attention-baseline.txt" \
      | sed "s/^/baseline: /" | tee -a "$out/summary.txt"
  fi
  "$bin/gpu_decode_attention_bench" > "$out/decode-attention.txt" 2>&1
  grep -E "^\| [a-z0-9_]+ \| 256 \| 256 \| 8192" "$out/decode-attention.txt" | tee -a "$out/summary.txt"
fi
python3 benchmarks/make_long_workload.py --out "$runs/long-64.json"
sha256sum "$runs/long-64.json" | tee -a "$out/summary.txt"
# run KV WORKLOAD [DIR]: one bench with cache.kv_cache_dtype = KV, by the build in DIR (default
# this one's).
run() {
  local kv=$1 kind=$2 dir=${3:-$bin} label
  label=$kv; [ "$dir" = "$bin" ] || label="baseline $kv"
  local config=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$dir\"]"
                --set model.path=data/models/qwen3-0.6b --set "cache.kv_cache_dtype=\"$kv\"")
  local json="$runs/$kind-${label// /-}-$r.json"
  local launcher=(env LD_LIBRARY_PATH="$dir/../lib:${LD_LIBRARY_PATH:-}" "$dir/minivllm")
  case $kind in
    throughput) "${launcher[@]}" bench throughput "${config[@]}" \
                  --workload benchmarks/throughput-256.json --output "$json" ;;
    long) "${launcher[@]}" bench throughput "${config[@]}" --set model.max_model_len=8704 \
            --workload "$runs/long-64.json" --output "$json" ;;
    latency) "${launcher[@]}" bench latency "${config[@]}" --concurrency 1 --output "$json" ;;
    latency-8) "${launcher[@]}" bench latency "${config[@]}" --concurrency 8 --output "$json" ;;
    ttft-*) "${launcher[@]}" bench latency "${config[@]}" --concurrency 1 \
              --prompt-len "${kind#ttft-}" --max-tokens 1 --num-requests 30 --output "$json" ;;
  esac
  python3 scripts/gpu/bench_summary.py "$label $kind round $r" "$json" | tee -a "$out/summary.txt"
}
{
  for r in $(seq 1 "$rounds"); do
    for kind in "${kinds[@]}"; do
      [ "$kind" = long ] && [ "$r" -gt 1 ] && continue
      run auto "$kind"
      run fp8_e4m3 "$kind"
      [ -n "$baseline" ] && run fp8_e4m3 "$kind" "$baseline"
    done
  done
  # Issue 30's figures: TPOT at concurrency 8, the first token of a prompt alone.
  if [ "$quick" != 1 ]; then
    r=1 run auto latency-8
    r=1 run auto ttft-128
    r=1 run auto ttft-1024
  fi
} > "$out/engine.log" 2>&1
cat "$out/summary.txt"
rm -f "$runs/long-64.json"
tar -C "$runs" -cJf "$out/runs.tar.xz" .
