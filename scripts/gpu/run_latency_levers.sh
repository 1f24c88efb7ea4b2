#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: the latency levers in one call (when device
# time is scarce), Qwen3-0.6B shape (configs/qwen3-0.6b-h200.toml), bf16, most telling first,
# each line of summary.txt written as it completes:
#   the GEMM tests, CudaOps' normed projections, and the step runner's and the goldens' with the
#   experiments on (tests.log);
#   gpu_step_modes with the L2 prefetch (MINIVLLM_L2_PREFETCH) and the norm inside the skinny GEMM
#   (MINIVLLM_NORM_GEMM) off / on, each alone and both, then the prefetch with the tile GEMM up
#   to 128 rows (MINIVLLM_TILE_MAX_ROWS);
#   c=1 TPOT with neither, each, both; c=8 with neither / both; TTFT of a lone 128-token prompt
#   with prefill graphs off (cuda_graph_max_prefill_tokens = 0) / on (512);
#   throughput-256 with all off, then all on (within 2 %);
#   TTFT of a lone 1,024-token prompt with prefill graphs at 0 / 1,024.
# Each bench's JSON in runs/ (numbered, kept as they come: a call cut short keeps what ran). `short` (for a call with ~2-3 minutes left): only the GEMM,
# normed-projection and step-runner tests, the four step modes, and c=1 TPOT's four runs.
#   scripts/gpu/run_latency_levers.sh [short]
set -uo pipefail
short=${1:-}
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
{
  tests=(test_cuda_skinny_gemm test_cuda_normed_linear test_cuda_tile_gemm test_cuda_step_runner)
  [ -z "$short" ] && tests+=(test_cuda_golden)
  for t in "${tests[@]}"; do
    MINIVLLM_L2_PREFETCH=1 MINIVLLM_NORM_GEMM=1 "$bin/$t"
    rc=$?
    echo "== $t exit $rc"
  done
} > "$out/tests.log" 2>&1
grep -E "^== .* exit|FAILED" "$out/tests.log" | tee -a "$out/summary.txt"
# Variants PREFETCH:TILE_MAX_ROWS:NORM_GEMM.
variants=(0:32:0 1:32:0 0:32:1 1:32:1)
[ -z "$short" ] && variants+=(1:128:0)
for variant in "${variants[@]}"; do
  IFS=: read -r prefetch tile norm <<< "$variant"
  MINIVLLM_L2_PREFETCH=$prefetch MINIVLLM_TILE_MAX_ROWS=$tile MINIVLLM_NORM_GEMM=$norm \
    "$bin/gpu_step_modes" data/models/qwen3-0.6b "$PWD/$bin" > "$out/steps-$variant.log" 2>&1
  grep -E "^ +(decode (1|8|64|256)|prompt)" "$out/steps-$variant.log" \
    | sed "s/^/prefetch $prefetch tile <= $tile norm in gemm $norm: /" | tee -a "$out/summary.txt"
done
# bench LABEL PREFETCH:NORM_GEMM PREFILL_GRAPH_TOKENS ARGS...: one bench, summarized (its JSON
# numbered).
runs_done=0
mkdir -p "$out/runs"
bench() {
  local label=$1 prefetch=${2%:*} norm=${2#*:} tokens=$3
  shift 3
  runs_done=$((runs_done + 1))
  local json="$out/runs/$runs_done.json"
  MINIVLLM_L2_PREFETCH=$prefetch MINIVLLM_NORM_GEMM=$norm "$MINIVLLM_BIN" bench "$@" \
    --config configs/qwen3-0.6b-h200.toml \
    --set "runtime.plugin_dirs=[\"$PWD/$bin\"]" --set model.path=data/models/qwen3-0.6b \
    --set "runtime.cuda_graph_max_prefill_tokens=$tokens" --output "$json" >> "$out/engine.log" 2>&1
  python3 scripts/gpu/bench_summary.py "$label" "$json" | tee -a "$out/summary.txt"
}
bench "c1 neither" 0:0 512 latency --concurrency 1
bench "c1 prefetch" 1:0 512 latency --concurrency 1
bench "c1 norm in gemm" 0:1 512 latency --concurrency 1
bench "c1 both" 1:1 512 latency --concurrency 1
if [ -z "$short" ]; then
  bench "c8 neither" 0:0 512 latency --concurrency 8
  bench "c8 both" 1:1 512 latency --concurrency 8
  for tokens in 0 512 0 512; do
    bench "ttft128 prefill graphs <= $tokens" 1:1 "$tokens" latency --concurrency 1 \
      --prompt-len 128 --max-tokens 1 --num-requests 32
  done
  bench "throughput-256 all off" 0:0 0 throughput --workload benchmarks/throughput-256.json
  bench "throughput-256 all on" 1:1 512 throughput --workload benchmarks/throughput-256.json
  for tokens in 0 1024; do
    bench "ttft1024 prefill graphs <= $tokens" 1:1 "$tokens" latency --concurrency 1 \
      --prompt-len 1024 --max-tokens 1 --num-requests 32
  done
fi
