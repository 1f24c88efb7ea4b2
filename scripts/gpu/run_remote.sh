#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: the engine with its one rank in a
# `minivllm worker` process (parallel.remote_workers = 1, no local rank; CAF's network layer on
# 127.0.0.1) against the same engine in one process, Qwen3-0.6B shape, alternated per round:
#   greedy outputs of `generate` (8 prompts x 64 tokens) must be equal;
#   throughput-256 (`bench throughput`) and concurrency 1 (`bench latency`, 8 x 128 -> 1,024).
# $OUT gets remote.log, remote-summary.txt, worker.log and every run's output in remote-runs.tar.xz.
#   scripts/gpu/run_remote.sh [ROUNDS]   (default 2)
set -uo pipefail
rounds=${1:-2}
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
head -c 32 /dev/urandom | base64 > "$runs/token"
config=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$MINIVLLM_PLUGIN_DIR\"]"
        --set model.path=data/models/qwen3-0.6b --set 'runtime.log_level="warn"')
remote=(--set parallel.remote_workers=1 --set 'parallel.listen="127.0.0.1:47400"'
        --set "parallel.join_token_file=\"$runs/token\"")
prompts=()
for p in "Hello" "The capital of France is" "1, 2, 3," "Once upon a time" "def main():" \
         "The H200 has" "Tensor parallelism splits" "A B C D"; do prompts+=(--prompt "$p"); done
summary() {  # summary LABEL JSON
  python3 scripts/gpu/bench_summary.py "$1" "$2" | tee -a "$out/remote-summary.txt"
}
{
  "$MINIVLLM_BIN" generate "${config[@]}" "${prompts[@]}" --max-tokens 64 --temperature 0 --json \
    > "$runs/generate-inproc.jsonl"
  with_worker "$MINIVLLM_BIN" generate "${config[@]}" "${remote[@]}" "${prompts[@]}" --max-tokens 64 \
    --temperature 0 --json > "$runs/generate-remote.jsonl"
  python3 - "$runs/generate-inproc.jsonl" "$runs/generate-remote.jsonl" <<'PY' | tee -a "$out/remote-summary.txt"
import json, sys
a = [json.loads(l)["token_ids"] for l in open(sys.argv[1])]
b = [json.loads(l)["token_ids"] for l in open(sys.argv[2])]
same = sum(x == y for x, y in zip(a, b))
print(f"greedy outputs: {same} of {len(a)} equal (remote {len(b)})")
PY
  for r in $(seq 1 "$rounds"); do
    "$MINIVLLM_BIN" bench throughput "${config[@]}" --workload benchmarks/throughput-256.json \
      --output "$runs/throughput-inproc-$r.json" && summary "round $r in-process throughput-256" "$runs/throughput-inproc-$r.json"
    with_worker "$MINIVLLM_BIN" bench throughput "${config[@]}" "${remote[@]}" \
      --workload benchmarks/throughput-256.json --output "$runs/throughput-remote-$r.json" &&
      summary "round $r remote-worker throughput-256" "$runs/throughput-remote-$r.json"
    "$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency 1 --num-requests 8 \
      --output "$runs/latency-inproc-$r.json" && summary "round $r in-process c=1" "$runs/latency-inproc-$r.json"
    with_worker "$MINIVLLM_BIN" bench latency "${config[@]}" "${remote[@]}" --concurrency 1 \
      --num-requests 8 --output "$runs/latency-remote-$r.json" &&
      summary "round $r remote-worker c=1" "$runs/latency-remote-$r.json"
  done
} 2>&1 | tee "$out/remote.log"
rm -f "$runs/token"
tar -C "$runs" -cJf "$out/remote-runs.tar.xz" .
