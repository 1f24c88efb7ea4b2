#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh and scripts/gpu/bundle_baseline.sh BUILD
# benchmarks/gpu_decode_attention_bench: a decode-attention change's A/B in one call. The paged
# attention and engine tests of this build, then the baseline's (A) and this build's (B)
# decode-attention bench, the long workload (benchmarks/make_long_workload.py, max_model_len
# 8704) and throughput-256, each with the bf16 and the fp8_e4m3 cache, A B alternated; Qwen3-0.6B
# shape (configs/qwen3-0.6b-h200.toml). $OUT gets the tests' logs, decode-attention-{A,B}.txt,
# each run's JSON and summary.txt.
#   scripts/gpu/run_long_ab.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin base=.gpu/baseline/bin
mkdir -p .gpu/baseline && tar -C .gpu/baseline -xJf .gpu/baseline-bin.tar.xz
echo "A = baseline $(cat .gpu/baseline-commit), B = $(cat .gpu/commit)" | tee -a "$out/summary.txt"
for t in test_cuda_paged_attention test_cuda_engine; do
  "$bin/$t" > "$out/$t.log" 2>&1
  echo "$t exit $?" | tee -a "$out/summary.txt"
done
for side in A B; do
  dir=$bin; [ "$side" = A ] && dir=$base
  "$dir/gpu_decode_attention_bench" > "$out/decode-attention-$side.txt" 2>&1
  grep -E "^\| [a-z0-9_]+ \| 256 \| (32|48|64) \| -2 " "$out/decode-attention-$side.txt" \
    | sed "s/^/$side: /" | tee -a "$out/summary.txt"
done
python3 benchmarks/make_long_workload.py --out "$runs/long-64.json"
for workload in long throughput; do
  for kv in auto fp8_e4m3; do
    for side in A B; do
      dir=$bin; [ "$side" = A ] && dir=$base
      args=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$dir\"]"
            --set model.path=data/models/qwen3-0.6b --set "cache.kv_cache_dtype=\"$kv\"")
      if [ "$workload" = long ]; then
        args+=(--set model.max_model_len=8704 --workload "$runs/long-64.json")
      else
        args+=(--workload benchmarks/throughput-256.json)
      fi
      json="$out/$workload-$kv-$side.json"
      "$dir/minivllm" bench throughput "${args[@]}" --output "$json" \
        > "$out/$workload-$kv-$side.log" 2>&1
      python3 scripts/gpu/bench_summary.py "$side $kv $workload" "$json" | tee -a "$out/summary.txt"
    done
  done
done
