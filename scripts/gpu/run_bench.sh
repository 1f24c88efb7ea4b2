#!/usr/bin/env bash
# Run on the GPU machine, from the repository root, after scripts/gpu/bundle.sh packaged .gpu/:
# the end-to-end benchmarks on the Qwen3-0.6B-shaped checkpoint (configs/qwen3-0.6b-h200.toml).
# $OUT (or /tmp/gpu-out) gets the JSON of each bench command and bench.log (the whole-model
# GPU benchmarks' tables too).
#   scripts/gpu/run_bench.sh [--set k=v]...   (extra settings for every run)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
config=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$MINIVLLM_PLUGIN_DIR\"]"
        --set model.path=data/models/qwen3-0.6b "$@")
{
  for b in gpu_step_modes gpu_step_breakdown; do
    echo "== $b"
    ".gpu/bundle/bin/$b" data/models/qwen3-0.6b "$MINIVLLM_PLUGIN_DIR"
  done
  echo "== actor_step_bench (CPU side of a 256-sequence decode step, no-arithmetic model)"
  .gpu/bundle/bin/actor_step_bench 256 100 600 5 0 256
  echo "== actor_step_bench, 5 ms per step on the worker (the scheduler's turn starts cold)"
  .gpu/bundle/bin/actor_step_bench 256 20 120 3 5000 256
  "$MINIVLLM_BIN" bench throughput "${config[@]}" --workload benchmarks/throughput-256.json \
    --output "$out/bench-throughput.json"
  "$MINIVLLM_BIN" bench latency "${config[@]}" --output "$out/bench-latency.json"
  "$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency 1 --prompt-len 1024 --max-tokens 1 \
    --output "$out/bench-ttft-1024.json"
} 2>&1 | tee "$out/bench.log"
