#!/usr/bin/env bash
# 2026-12-07 (eleventh session) call 1: main (db43b0f) with the tightened fp8 bad-block check
# (test_cuda_paged_attention), then throughput-256 with the bf16 ("auto") and fp8_e4m3 caches,
# by main and by a probe build that leaves decode attention out of every step (outputs wrong,
# shapes and schedule not: bench throughput ignores EOS). main - probe = decode attention's cost
# in place, per cache. Two rounds, alternated.
set -uo pipefail
source scripts/gpu/prepare.sh
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
timeout 240 "$bin/test_cuda_paged_attention" > "$out/tests.txt" 2>&1
echo "test_cuda_paged_attention exit $?" | tee -a "$out/summary.txt"
grep -E "FAILED|PASSED|Failure" "$out/tests.txt" | tail -8 | tee -a "$out/summary.txt"
mkdir -p .gpu/baseline && tar -C .gpu/baseline -xJf .gpu/baseline-bin.tar.xz
probe=.gpu/baseline/bin
echo "probe: $(cat .gpu/baseline-commit)" | tee -a "$out/summary.txt"
run() {  # run KV BUILD(main|probe) ROUND
  local kv=$1 which=$2 r=$3 dir=$bin extra=()
  [ "$which" = probe ] && dir=$probe && extra=(MINIVLLM_TIMING_SKIP_ATTENTION=1)
  local json="$runs/throughput-$kv-$which-$r.json"
  env "${extra[@]}" LD_LIBRARY_PATH="$dir/../lib:${LD_LIBRARY_PATH:-}" timeout 150 "$dir/minivllm" \
    bench throughput --config configs/qwen3-0.6b-h200.toml \
    --set "runtime.plugin_dirs=[\"$PWD/$dir\"]" --set model.path=data/models/qwen3-0.6b \
    --set "cache.kv_cache_dtype=\"$kv\"" --workload benchmarks/throughput-256.json \
    --output "$json" >> "$out/engine.log" 2>&1
  echo "exit $?" >> "$out/engine.log"
  python3 scripts/gpu/bench_summary.py "$which $kv throughput round $r" "$json" | tee -a "$out/summary.txt"
}
for r in 1 2; do
  for which in main probe; do
    run auto $which $r
    run fp8_e4m3 $which $r
  done
done
tar -C "$runs" -cJf "$out/runs.tar.xz" .
