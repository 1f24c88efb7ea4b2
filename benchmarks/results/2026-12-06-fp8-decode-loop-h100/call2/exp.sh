#!/usr/bin/env bash
# This call (short of device time): the fp8 decode loop with fewer instructions (work tree on
# a257ee6) against bf1f951 (baseline), most important first: the kernel test, both
# decode-attention benches, then throughput-256 and the long workload with the fp8 cache, this
# build and the baseline alternated. Everything lands in $OUT as it goes.
set -uo pipefail
source scripts/gpu/prepare.sh
mkdir -p .gpu/baseline && tar -C .gpu/baseline -xJf .gpu/baseline-bin.tar.xz
bin=.gpu/bundle/bin base=.gpu/baseline/bin
"$bin/test_cuda_paged_attention" > "$out/paged-attention-test.log" 2>&1
echo "test_cuda_paged_attention exit $?" | tee -a "$out/summary.txt"
LD_LIBRARY_PATH="$base/../lib:${LD_LIBRARY_PATH:-}" "$base/gpu_decode_attention_bench" > "$out/decode-attention-baseline.txt" 2>&1
"$bin/gpu_decode_attention_bench" > "$out/decode-attention.txt" 2>&1
grep -E "^\| [a-z0-9_]+ \| 256 \| 256 \| 8192" "$out/decode-attention-baseline.txt" | sed "s/^/baseline: /" | tee -a "$out/summary.txt"
grep -E "^\| [a-z0-9_]+ \| 256 \| 256 \| 8192" "$out/decode-attention.txt" | tee -a "$out/summary.txt"
make_model qwen3-0.6b qwen3
python3 benchmarks/make_long_workload.py --out "$runs/long-64.json"
for kind in throughput long; do
  for dir in "$bin" "$base"; do
    label=new; [ "$dir" = "$base" ] && label=baseline
    work=benchmarks/throughput-256.json extra=()
    [ $kind = long ] && work=$runs/long-64.json extra=(--set model.max_model_len=8704)
    env LD_LIBRARY_PATH="$dir/../lib:${LD_LIBRARY_PATH:-}" "$dir/minivllm" bench throughput \
      --config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$dir\"]" \
      --set model.path=data/models/qwen3-0.6b --set 'cache.kv_cache_dtype="fp8_e4m3"' "${extra[@]}" \
      --workload "$work" --output "$runs/$kind-$label.json" >> "$out/engine.log" 2>&1
    python3 scripts/gpu/bench_summary.py "$label fp8 $kind" "$runs/$kind-$label.json" | tee -a "$out/summary.txt"
    tar -C "$runs" -cJf "$out/runs.tar.xz" --exclude long-64.json .
  done
done
