#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh and scripts/gpu/bundle_baseline.sh: the
# baseline's launcher and this tree's, alternated (A B A B ...), on throughput-256 and on
# single-stream latency, Qwen3-0.6B shape (configs/qwen3-0.6b-h200.toml). $OUT gets ab.log,
# ab-summary.txt and each run's JSON in ab.tar.xz.
#   scripts/gpu/run_ab.sh [ROUNDS]   (default 2)
set -uo pipefail
rounds=${1:-2}
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
mkdir -p .gpu/baseline && tar -C .gpu/baseline -xJf .gpu/baseline-bin.tar.xz
echo "A = baseline $(cat .gpu/baseline-commit), B = $(cat .gpu/commit)" | tee "$out/ab-summary.txt"
# run LABEL BIN PLUGIN_DIR KIND: one bench of KIND (throughput | latency) with that launcher.
run() {
  local label=$1 bin=$2 plugins=$3 kind=$4 lib
  lib=$(dirname "$(dirname "$bin")")/lib
  local config=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$plugins\"]"
                --set model.path=data/models/qwen3-0.6b)
  local json="$runs/$kind-$label-$r.json"
  if [ "$kind" = throughput ]; then
    LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" "$bin" bench throughput "${config[@]}" \
      --workload benchmarks/throughput-256.json --output "$json"
  else
    LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" "$bin" bench latency "${config[@]}" --concurrency 1 \
      --output "$json"
  fi
  python3 - "$json" "$label" "$kind" <<'PY' | tee -a "$out/ab-summary.txt"
import json, sys
d = json.load(open(sys.argv[1])); label, kind = sys.argv[2], sys.argv[3]
if kind == "throughput":
    b = [x for x in d["step_times"]["buckets"]
         if x["kind"] == "decode" and int(x["rows"].rstrip("+").split("-")[0]) >= 129]
    turn = sum(x["scheduler_seconds"] for x in b) / max(1, sum(x["steps"] for x in b)) * 1e6
    print(f"{label} throughput-256: {d['output_tokens_per_s']:.0f} output tok/s, scheduler turn {turn:.1f} us at 129-256 rows")
else:
    l = d["levels"][0]
    print(f"{label} latency c=1: TPOT p50 {l['tpot_ms']['p50']:.4f} ms, TTFT p50 {l['ttft_ms']['p50']:.3f} ms")
PY
}
{
  for r in $(seq 1 "$rounds"); do
    for kind in throughput latency; do
      run A .gpu/baseline/bin/minivllm "$PWD/.gpu/baseline/bin" "$kind"
      run B "$MINIVLLM_BIN" "$MINIVLLM_PLUGIN_DIR" "$kind"
    done
  done
} > "$out/ab.log" 2>&1
cat "$out/ab-summary.txt"
tar -C "$runs" -cJf "$out/ab.tar.xz" .
