#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: the latency experiments in one call (when
# device time is scarce), Qwen3-0.6B shape (configs/qwen3-0.6b-h200.toml), bf16, most telling
# first, each line of summary.txt written as it completes. The experiments (off by default):
#   prefetch  MINIVLLM_L2_PREFETCH=1  the skinny and tile GEMMs ask the L2 for the next weights
#   norm      MINIVLLM_NORM_GEMM=1    a pre-norm block's RMSNorm inside the skinny GEMM after it
#   tile128   MINIVLLM_TILE_MAX_ROWS=128  the tile GEMM up to 128 rows (small prefills)
# Runs: the kernel tests, CudaOps' normed projections, and the step runner's and the goldens'
# with all of them on (tests.log); gpu_step_modes with none, each, all, and prefetch + tile128;
# c=1 TPOT with none, each, all; c=8 with none / all; TTFT of a lone 128-token prompt with prefill
# graphs off (cuda_graph_max_prefill_tokens = 0) / on (512), all on; throughput-256 with none,
# then all (within 2 %); TTFT of a lone 1,024-token prompt with prefill graphs at 0 / 1,024.
# Each bench's JSON in runs/ (numbered, kept as they come: a call cut short keeps what ran).
# `short` (for a call with ~3 minutes left): the tests but the goldens, the step modes with none
# and all, and c=1 TPOT with none and all.
#   scripts/gpu/run_latency_levers.sh [short]
set -uo pipefail
short=${1:-}
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
# settings NAME: the environment of an experiment set (none, prefetch, norm, all, tile128).
settings() {
  case $1 in
    none) echo "MINIVLLM_L2_PREFETCH=0" ;;
    prefetch) echo "MINIVLLM_L2_PREFETCH=1" ;;
    norm) echo "MINIVLLM_NORM_GEMM=1" ;;
    all) echo "MINIVLLM_L2_PREFETCH=1 MINIVLLM_NORM_GEMM=1" ;;
    tile128) echo "MINIVLLM_L2_PREFETCH=1 MINIVLLM_TILE_MAX_ROWS=128" ;;
  esac
}
{
  tests=(test_cuda_skinny_gemm test_cuda_normed_linear test_cuda_tile_gemm test_cuda_step_runner)
  [ -z "$short" ] && tests+=(test_cuda_golden test_cuda_engine)
  for t in "${tests[@]}"; do
    env $(settings all) "$bin/$t"
    rc=$?
    echo "== $t exit $rc"
  done
} > "$out/tests.log" 2>&1
grep -E "^== .* exit|FAILED" "$out/tests.log" | tee -a "$out/summary.txt"
variants=(none all)
[ -z "$short" ] && variants=(none prefetch norm all tile128)
for variant in "${variants[@]}"; do
  env $(settings "$variant") "$bin/gpu_step_modes" data/models/qwen3-0.6b "$PWD/$bin" \
    > "$out/steps-$variant.log" 2>&1
  grep -E "^ +(decode (1|8|64|256)|prompt)" "$out/steps-$variant.log" \
    | sed "s/^/$variant: /" | tee -a "$out/summary.txt"
done
# bench LABEL SETTINGS PREFILL_GRAPH_TOKENS ARGS...: one bench, summarized (its JSON numbered).
runs_done=0
mkdir -p "$out/runs"
bench() {
  local label=$1 variant=$2 tokens=$3
  shift 3
  runs_done=$((runs_done + 1))
  local json="$out/runs/$runs_done.json"
  env $(settings "$variant") "$MINIVLLM_BIN" bench "$@" --config configs/qwen3-0.6b-h200.toml \
    --set "runtime.plugin_dirs=[\"$PWD/$bin\"]" --set model.path=data/models/qwen3-0.6b \
    --set "runtime.cuda_graph_max_prefill_tokens=$tokens" --output "$json" >> "$out/engine.log" 2>&1
  python3 scripts/gpu/bench_summary.py "$label" "$json" | tee -a "$out/summary.txt"
}
c1=(none all)
[ -z "$short" ] && c1=(none prefetch norm all)
for variant in "${c1[@]}"; do bench "c1 $variant" "$variant" 512 latency --concurrency 1; done
[ -n "$short" ] && exit 0
bench "c8 none" none 512 latency --concurrency 8
bench "c8 all" all 512 latency --concurrency 8
for tokens in 0 512 0 512; do
  bench "ttft128 all, prefill graphs <= $tokens" all "$tokens" latency --concurrency 1 \
    --prompt-len 128 --max-tokens 1 --num-requests 32
done
bench "throughput-256 none, no prefill graphs" none 0 throughput \
  --workload benchmarks/throughput-256.json
bench "throughput-256 all, prefill graphs <= 512" all 512 throughput \
  --workload benchmarks/throughput-256.json
for tokens in 0 1024; do
  bench "ttft1024 all, prefill graphs <= $tokens" all "$tokens" latency --concurrency 1 \
    --prompt-len 1024 --max-tokens 1 --num-requests 32
done
