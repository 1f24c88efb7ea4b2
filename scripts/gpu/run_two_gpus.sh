#!/usr/bin/env bash
# Run on a two-GPU machine (the device tool's nvidia-h200-x2) after scripts/gpu/bundle.sh: the
# tensor- and data-parallel runs of issue 27, one part per device call (each fits in 10 minutes).
# Random-v1 checkpoints, bf16; Qwen3-0.6B shape (configs/qwen3-0.6b-h200.toml) and Llama-3.1-8B
# shape (configs/llama3.1-8b-h200.toml, max_model_len 4096). $OUT gets PART.log, PART-summary.txt
# and PART-runs.tar.xz (every run's JSON and generate output).
#   check   device topology; test_cuda_engine (TP=2 and DP=2 against the goldens) and
#           test_cuda_collectives; gpu_allreduce_bench at hidden 1,024 and 4,096; greedy outputs
#           (32 prompts x 128 tokens for 0.6B, 16 x 64 for 8B) of TP=2 and DP=2 against TP=1 and
#           DP=1, compared up to each request's first top-2 margin below 0.05
#           (scripts/gpu/compare_greedy.py);
#   small   0.6B, ROUNDS alternated: throughput-256 at TP=1, DP=2 and TP=2; c=1 latency at TP=1 and
#           TP=2 (the decode step times for the DP=2 ceiling are in the runs' JSON);
#   large   8B, ROUNDS alternated: c=1 latency (4 requests x 1,024 tokens) and throughput-256 at
#           TP=1 and TP=2;
#   remote  0.6B, TP=2 with one rank in a `minivllm worker` process on GPU 1 against both ranks
#           in the engine's process: greedy outputs compared, throughput-256 and c=1, alternated.
#   scripts/gpu/run_two_gpus.sh PART [ROUNDS]   (default 2)
set -uo pipefail
part=${1:?usage: run_two_gpus.sh check|small|large|remote [ROUNDS]}
rounds=${2:-2}
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
bin=.gpu/bundle/bin
summary_file="$out/$part-summary.txt"
nvidia-smi topo -m >> "$out/device.txt" 2>&1

plugins=(--set "runtime.plugin_dirs=[\"$PWD/$bin\"]")
small=(--config configs/qwen3-0.6b-h200.toml "${plugins[@]}" --set model.path=data/models/qwen3-0.6b)
large=(--config configs/llama3.1-8b-h200.toml "${plugins[@]}" --set model.path=data/models/llama3.1-8b)
tp2=(--set parallel.tensor_parallel_size=2)
dp2=(--set parallel.data_parallel_size=2)
for i in $(seq 0 31); do
  echo "\"Request $i: a story about $((i * 7 + 3)) lighthouses, told slowly\""
done > "$runs/prompts.txt"

# gen NAME TOKENS PROMPTS CONFIG...: greedy outputs with each step's top 2 logprobs.
gen() {
  local name=$1 tokens=$2 prompts=$3
  shift 3
  head -n "$prompts" "$runs/prompts.txt" > "$runs/prompts-$prompts.txt"
  "$MINIVLLM_BIN" generate "$@" --set 'runtime.log_level="warn"' --prompt-file "$runs/prompts-$prompts.txt" \
    --max-tokens "$tokens" --temperature 0 --ignore-eos --logprobs 2 --json > "$runs/$name.jsonl"
}
compare() {  # compare LABEL REFERENCE OTHER
  python3 scripts/gpu/compare_greedy.py "$runs/$2.jsonl" "$runs/$3.jsonl" --label "$1" \
    | tee -a "$summary_file"
}
summary() {  # summary LABEL JSON
  python3 scripts/gpu/bench_summary.py "$1" "$2" | tee -a "$summary_file"
}
throughput() {  # throughput NAME CONFIG...
  local name=$1
  shift
  "$MINIVLLM_BIN" bench throughput "$@" --workload benchmarks/throughput-256.json \
    --output "$runs/$name.json" && summary "$name throughput-256" "$runs/$name.json"
}
latency() {  # latency NAME REQUESTS CONFIG...
  local name=$1 requests=$2
  shift 2
  "$MINIVLLM_BIN" bench latency "$@" --concurrency 1 --num-requests "$requests" \
    --output "$runs/$name.json" && summary "$name c=1" "$runs/$name.json"
}

{
  case $part in
    check)
      for t in test_cuda_engine test_cuda_collectives; do
        echo "== $t"
        "$bin/$t"
        echo "== $t exit $?"
      done > "$out/tests.log" 2>&1
      grep -E "^== .* exit|SKIPPED|FAILED" "$out/tests.log" | tee -a "$summary_file"
      for hidden in 1024 4096; do "$bin/gpu_allreduce_bench" "$hidden"; done \
        | tee "$out/allreduce.txt"
      make_model qwen3-0.6b qwen3
      gen small-tp1 128 32 "${small[@]}"
      gen small-tp2 128 32 "${small[@]}" "${tp2[@]}"
      gen small-dp2 128 32 "${small[@]}" "${dp2[@]}"
      compare "Qwen3-0.6B TP=2 against TP=1" small-tp1 small-tp2
      compare "Qwen3-0.6B DP=2 against DP=1" small-tp1 small-dp2
      make_model llama3.1-8b llama3
      gen large-tp1 64 16 "${large[@]}"
      gen large-tp2 64 16 "${large[@]}" "${tp2[@]}"
      compare "Llama-3.1-8B TP=2 against TP=1" large-tp1 large-tp2
      ;;
    small)
      make_model qwen3-0.6b qwen3
      for r in $(seq 1 "$rounds"); do
        throughput "small-tp1-$r" "${small[@]}"
        throughput "small-dp2-$r" "${small[@]}" "${dp2[@]}"
        throughput "small-tp2-$r" "${small[@]}" "${tp2[@]}"
        latency "small-tp1-latency-$r" 8 "${small[@]}"
        latency "small-tp2-latency-$r" 8 "${small[@]}" "${tp2[@]}"
      done
      ;;
    large)
      make_model llama3.1-8b llama3
      for r in $(seq 1 "$rounds"); do
        latency "large-tp1-latency-$r" 4 "${large[@]}"
        latency "large-tp2-latency-$r" 4 "${large[@]}" "${tp2[@]}"
        throughput "large-tp1-$r" "${large[@]}"
        throughput "large-tp2-$r" "${large[@]}" "${tp2[@]}"
      done
      ;;
    remote)
      make_model qwen3-0.6b qwen3
      head -c 32 /dev/urandom | base64 > "$runs/token"
      worker_args=("${plugins[@]}" --set model.path=data/models/qwen3-0.6b --set 'parallel.devices=[1]')
      remote=(--set parallel.remote_workers=1 --set 'parallel.listen="127.0.0.1:47400"'
              --set "parallel.join_token_file=\"$runs/token\"" --set 'parallel.devices=[0]')
      gen small-tp2 128 32 "${small[@]}" "${tp2[@]}"
      with_worker gen small-tp2-remote 128 32 "${small[@]}" "${tp2[@]}" "${remote[@]}"
      compare "Qwen3-0.6B TP=2, a rank in a worker process, against one process" \
        small-tp2 small-tp2-remote
      for r in $(seq 1 "$rounds"); do
        throughput "small-tp2-inproc-$r" "${small[@]}" "${tp2[@]}"
        with_worker throughput "small-tp2-remote-$r" "${small[@]}" "${tp2[@]}" "${remote[@]}"
        latency "small-tp2-inproc-latency-$r" 8 "${small[@]}" "${tp2[@]}"
        with_worker latency "small-tp2-remote-latency-$r" 8 "${small[@]}" "${tp2[@]}" "${remote[@]}"
      done
      rm -f "$runs/token"
      ;;
    *) echo "unknown part $part (check, small, large or remote)" >&2; exit 2 ;;
  esac
} 2>&1 | tee "$out/$part.log"
cat "$summary_file"
tar -C "$runs" -cJf "$out/$part-runs.tar.xz" .
