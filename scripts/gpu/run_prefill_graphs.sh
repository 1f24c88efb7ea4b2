#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: the prefill CUDA graphs' checks and figures,
# Qwen3-0.6B shape (configs/qwen3-0.6b-h200.toml), bf16, in two device calls (each under 10 min):
#   tests   every GPU test program (the step runner's graph-against-padded checks, the goldens
#           and the engine with graphs on), each with its exit status, in tests.log; and
#           gpu_step_modes (decode steps; 128 / 512 / 1,024-token prompts eager, staged and
#           replayed) in steps.log;
#   bench   ROUNDS alternated rounds with prefill graphs off (cuda_graph_max_prefill_tokens = 0)
#           and on (the default, 512): TTFT of a lone 128-token prompt, c=1 TPOT and
#           throughput-256 (which must stay within 2 %); and TTFT of a lone 1,024-token prompt at
#           0, 512 and 1,024 (graphed only at 1,024). Each run's JSON in runs.tar.xz.
# Both write summary.txt.
#   scripts/gpu/run_prefill_graphs.sh tests|bench [ROUNDS]   (default 2)
set -uo pipefail
part=${1:?usage: run_prefill_graphs.sh tests|bench [ROUNDS]}
rounds=${2:-2}
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
# run TOKENS KIND: one bench with runtime.cuda_graph_max_prefill_tokens = TOKENS.
run() {
  local tokens=$1 kind=$2
  local config=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$bin\"]"
                --set model.path=data/models/qwen3-0.6b
                --set "runtime.cuda_graph_max_prefill_tokens=$tokens")
  local json="$runs/$kind-$tokens-$r.json"
  case $kind in
    ttft128) "$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency 1 --prompt-len 128 \
               --max-tokens 1 --num-requests 32 --output "$json" ;;
    ttft1024) "$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency 1 --prompt-len 1024 \
                --max-tokens 1 --num-requests 32 --output "$json" ;;
    latency) "$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency 1 --output "$json" ;;
    throughput) "$MINIVLLM_BIN" bench throughput "${config[@]}" \
                  --workload benchmarks/throughput-256.json --output "$json" ;;
  esac
  python3 scripts/gpu/bench_summary.py "prefill graphs <= $tokens $kind round $r" "$json" \
    | tee -a "$out/summary.txt"
}
case $part in
  tests)
    {
      for t in "$bin"/test_cuda_*; do
        echo "== $(basename "$t")"
        "$t"
        rc=$?  # before the echo's own command substitution resets $?
        echo "== $(basename "$t") exit $rc"
      done
    } > "$out/tests.log" 2>&1
    grep -E "^== .* exit|\[ step runner|FAILED" "$out/tests.log" | tee -a "$out/summary.txt"
    "$bin/gpu_step_modes" data/models/qwen3-0.6b "$PWD/$bin" > "$out/steps.log" 2>&1
    grep -E "^ +(decode 1|decode 8|prompt)" "$out/steps.log" | tee -a "$out/summary.txt"
    ;;
  bench)
    {
      for r in $(seq 1 "$rounds"); do
        for kind in ttft128 latency throughput; do
          run 0 "$kind"
          run 512 "$kind"
        done
        for tokens in 0 512 1024; do run "$tokens" ttft1024; done
      done
    } > "$out/engine.log" 2>&1
    ;;
  *) echo "unknown part $part (tests or bench)" >&2; exit 2 ;;
esac
cat "$out/summary.txt"
tar -C "$runs" -cJf "$out/runs.tar.xz" .
