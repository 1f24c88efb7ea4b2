#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: one build with an environment switch at
# each of VALUE..., Qwen3-0.6B shape (configs/qwen3-0.6b-h200.toml), bf16. In one call:
#   tests    every GPU test program once with the last value (the newest side), each with its
#            exit status;
#   kernels  gpu_decode_attention_bench once per value; gpu_step_modes ROUNDS rounds of every
#            value in turn;
#   engine   ROUNDS rounds of every value in turn: bench latency at concurrency 1 and 8, and
#            throughput-256; with LONG=1 also the long workload (benchmarks/make_long_workload.py)
#            with an fp8_e4m3 cache and a bf16 one, once with the first value and once with the last.
# PARTS (default "tests kernels engine") picks the parts, so that a call stays under 10 minutes.
# Lines are labelled VAR=value. $OUT gets tests.log, kernels.log, engine.log, summary.txt and each
# run's JSON in runs.tar.xz.
#   scripts/gpu/run_switch_ab.sh VAR ROUNDS VALUE VALUE...
set -uo pipefail
var=${1:?usage: run_switch_ab.sh VAR ROUNDS VALUE VALUE...}
rounds=${2:?}
shift 2
values=("$@")
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
last=${values[${#values[@]}-1]}
parts=" ${PARTS:-tests kernels engine} "
if [[ $parts == *" tests "* ]]; then
{
  for t in "$bin"/test_cuda_*; do
    echo "== $var=$last $(basename "$t")"
    env "$var=$last" "$t"
    rc=$?  # before the echo's own command substitution resets $?
    echo "== $var=$last $(basename "$t") exit $rc"
  done
} > "$out/tests.log" 2>&1
grep -E "^== .* exit|FAILED" "$out/tests.log" | tee -a "$out/summary.txt"
fi
if [[ $parts == *" kernels "* ]]; then
{
  for v in "${values[@]}"; do
    echo "== $var=$v gpu_decode_attention_bench"
    env "$var=$v" "$bin/gpu_decode_attention_bench" | sed "s/^/$var=$v: /"
  done
  for r in $(seq 1 "$rounds"); do
    for v in "${values[@]}"; do
      echo "== $var=$v gpu_step_modes round $r"
      env "$var=$v" "$bin/gpu_step_modes" data/models/qwen3-0.6b "$PWD/$bin" | sed "s/^/$var=$v: /"
    done
  done
} > "$out/kernels.log" 2>&1
grep -E ": (\| [a-z0-9_]+ \| 256 \| (1|8) \| |\| [a-z0-9_]+ \| 256 \| [0-9]+ \| -[12] )| +(decode (1|8) |prompt )" \
  "$out/kernels.log" | tee -a "$out/summary.txt"
fi
[ "${LONG:-0}" = 1 ] && python3 benchmarks/make_long_workload.py --out "$runs/long-64.json"
# run VALUE KIND [KV]: one engine bench with the switch at VALUE.
run() {
  local v=$1 kind=$2 kv=${3:-auto}
  local config=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$bin\"]"
                --set model.path=data/models/qwen3-0.6b --set "cache.kv_cache_dtype=\"$kv\"")
  local json="$runs/$kind-$kv-$v-$r.json"
  case $kind in
    c1) env "$var=$v" "$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency 1 --output "$json" ;;
    c8) env "$var=$v" "$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency 8 --output "$json" ;;
    throughput) env "$var=$v" "$MINIVLLM_BIN" bench throughput "${config[@]}" \
                  --workload benchmarks/throughput-256.json --output "$json" ;;
    long) env "$var=$v" "$MINIVLLM_BIN" bench throughput "${config[@]}" \
            --set model.max_model_len=8704 --workload "$runs/long-64.json" --output "$json" ;;
  esac
  python3 scripts/gpu/bench_summary.py "$var=$v $kind $kv round $r" "$json" | tee -a "$out/summary.txt"
}
[[ $parts == *" engine "* ]] && {
  for r in $(seq 1 "$rounds"); do
    for kind in c1 c8 throughput; do
      for v in "${values[@]}"; do run "$v" "$kind"; done
    done
  done
  if [ "${LONG:-0}" = 1 ]; then
    r=1
    for kv in fp8_e4m3 auto; do
      run "${values[0]}" long "$kv"
      run "$last" long "$kv"
    done
  fi
} > "$out/engine.log" 2>&1
cat "$out/summary.txt"
rm -f "$runs/long-64.json"
tar -C "$runs" -cJf "$out/runs.tar.xz" .
