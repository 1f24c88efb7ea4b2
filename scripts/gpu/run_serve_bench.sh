#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: the server against the in-process benches
# of the same build, alternated (in-process, then through `minivllm serve`, per round), Qwen3-0.6B
# shape (configs/qwen3-0.6b-h200.toml):
#   throughput-256: `bench throughput` vs `bench serve --request-rate inf`;
#   concurrency 1:  `bench latency --concurrency 1` (8 requests, 128 prompt tokens, 1,024 output
#                   tokens, greedy) vs `bench serve --max-concurrency 1` on the same shape.
# One server per round (it holds the device's memory; the in-process benches need it back).
# $OUT gets serve-bench.log, serve-summary.txt and every run's JSON in serve-bench.tar.xz.
#   scripts/gpu/run_serve_bench.sh [ROUNDS]   (default 3)
set -uo pipefail
rounds=${1:-3}
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
config=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$MINIVLLM_PLUGIN_DIR\"]"
        --set model.path=data/models/qwen3-0.6b --set 'runtime.log_level="warn"')
# The concurrency-1 workload: bench latency's shape, random ids (seeded), greedy.
python3 - "$runs/c1.json" <<'PY'
import json, random, sys
random.seed(7)
reqs = [{"prompt_token_ids": [random.randrange(151000) for _ in range(128)], "max_tokens": 1024}
        for _ in range(8)]
json.dump({"name": "c1-128x1024", "temperature": 0.0, "ignore_eos": True, "requests": reqs},
          open(sys.argv[1], "w"))
PY
summary() {  # summary LABEL JSON
  python3 scripts/gpu/bench_summary.py "$1" "$2" | tee -a "$out/serve-summary.txt"
}
{
  for r in $(seq 1 "$rounds"); do
    "$MINIVLLM_BIN" bench throughput "${config[@]}" --workload benchmarks/throughput-256.json \
      --output "$runs/throughput-inproc-$r.json" && summary "round $r in-process throughput-256" "$runs/throughput-inproc-$r.json"
    "$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency 1 --num-requests 8 \
      --output "$runs/latency-inproc-$r.json" && summary "round $r in-process c=1" "$runs/latency-inproc-$r.json"
    log="$runs/serve-$r.log"
    "$MINIVLLM_BIN" serve "${config[@]}" --port 0 > "$log.out" 2> "$log" &
    pid=$!
    for _ in $(seq 1 600); do grep -q "listening on" "$log.out" && break; sleep 0.2; done
    url=$(grep -o 'http://[^ ]*' "$log.out")
    echo "server $url (pid $pid)"
    "$MINIVLLM_BIN" bench serve --base-url "$url" --workload benchmarks/throughput-256.json \
      --output "$runs/throughput-serve-$r.json" && summary "round $r server throughput-256" "$runs/throughput-serve-$r.json"
    "$MINIVLLM_BIN" bench serve --base-url "$url" --workload "$runs/c1.json" --max-concurrency 1 \
      --output "$runs/latency-serve-$r.json" && summary "round $r server c=1" "$runs/latency-serve-$r.json"
    curl -s "$url/metrics" > "$runs/metrics-$r.txt"
    kill -TERM "$pid"; wait "$pid"; echo "server exit $?"
  done
} > "$out/serve-bench.log" 2>&1
cat "$out/serve-summary.txt"
tar -C "$runs" -cJf "$out/serve-bench.tar.xz" .
