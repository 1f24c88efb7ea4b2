#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: the projection weights' L2 prefetch
# (kernels/cuda/l2_prefetch.cuh) off (MINIVLLM_L2_PREFETCH=0) and on (1), alternated, Qwen3-0.6B
# shape (configs/qwen3-0.6b-h200.toml), bf16: the GPU tests with it on (tests.log), then ROUNDS
# rounds of gpu_step_modes (steps-*.log; also with the tile GEMM up to 128 rows), `bench latency`
# at c=1 and c=8, and throughput-256.
# summary.txt; each bench's JSON in runs.tar.xz.
#   scripts/gpu/run_l2_prefetch.sh [ROUNDS]   (default 2)
set -uo pipefail
rounds=${1:-2}
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
{
  for t in test_cuda_skinny_gemm test_cuda_tile_gemm test_cuda_golden test_cuda_step_runner \
           test_cuda_engine; do
    MINIVLLM_L2_PREFETCH=1 "$bin/$t"
    rc=$?
    echo "== $t exit $rc"
  done
} > "$out/tests.log" 2>&1
grep -E "^== .* exit|FAILED" "$out/tests.log" | tee -a "$out/summary.txt"
# bench SWITCH KIND: one bench with the prefetch off (0) or on (1).
bench() {
  local switch=$1 kind=$2
  local config=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$bin\"]"
                --set model.path=data/models/qwen3-0.6b)
  local json="$runs/$kind-$switch-$r.json"
  case $kind in
    c1) MINIVLLM_L2_PREFETCH=$switch "$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency 1 \
          --output "$json" ;;
    c8) MINIVLLM_L2_PREFETCH=$switch "$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency 8 \
          --output "$json" ;;
    throughput) MINIVLLM_L2_PREFETCH=$switch "$MINIVLLM_BIN" bench throughput "${config[@]}" \
                  --workload benchmarks/throughput-256.json --output "$json" ;;
  esac
  python3 scripts/gpu/bench_summary.py "prefetch $switch $kind round $r" "$json" \
    | tee -a "$out/summary.txt"
}
{
  for r in $(seq 1 "$rounds"); do
    # The prefetch off and on; then with the tile GEMM (which asks for the next weight, where
    # cuBLAS cannot) taking up to 128 rows (MINIVLLM_TILE_MAX_ROWS), for the 128-token prompt.
    for variant in 0:32 1:32 0:128 1:128; do
      MINIVLLM_L2_PREFETCH=${variant%:*} MINIVLLM_TILE_MAX_ROWS=${variant#*:} \
        "$bin/gpu_step_modes" data/models/qwen3-0.6b "$PWD/$bin" > "$out/steps-$variant-$r.log" 2>&1
      grep -E "^ +(decode|prompt)" "$out/steps-$variant-$r.log" \
        | sed "s/^/prefetch ${variant%:*} tile <= ${variant#*:}: /" | tee -a "$out/summary.txt"
    done
    for kind in c1 c8 throughput; do
      bench 0 "$kind"
      bench 1 "$kind"
    done
  done
} > "$out/engine.log" 2>&1
cat "$out/summary.txt"
tar -C "$runs" -cJf "$out/runs.tar.xz" .
