#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh and scripts/gpu/bundle_baseline.sh BUILD
# PROGRAM...: the other build's programs (A, .gpu/baseline) beside this tree's (B), Qwen3-0.6B
# shape (random-v1) where a program takes a model. GPU tests (test_cuda_*) run once each, A then
# B, with their exit status; benchmarks (gpu_*) alternate A B for ROUNDS rounds. Everything goes
# to ab.log; summary.txt has the exit statuses and the benchmarks' table rows.
#   scripts/gpu/run_kernel_ab.sh ROUNDS PROGRAM...   (names, e.g. test_cuda_prefill_attention)
set -uo pipefail
rounds=${1:?usage: run_kernel_ab.sh ROUNDS PROGRAM...}
shift
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
mkdir -p .gpu/baseline && tar -C .gpu/baseline -xJf .gpu/baseline-bin.tar.xz
echo "A = $(cat .gpu/baseline-commit), B = $(cat .gpu/commit)" | tee -a "$out/summary.txt"
# run LABEL DIR PROGRAM: one program of the build in DIR (its own plugins for a model run).
run() {
  local label=$1 dir=$2 program=$3
  local args=()
  [ "$program" = gpu_step_modes ] && args=(data/models/qwen3-0.6b "$PWD/$dir")
  echo "== $label $program" >> "$out/ab.log"
  LD_LIBRARY_PATH="$dir/../lib:${LD_LIBRARY_PATH:-}" "$dir/$program" "${args[@]}" \
    > "$runs/out.txt" 2>&1
  local rc=$?
  cat "$runs/out.txt" >> "$out/ab.log"
  if [[ $program == test_cuda_* ]]; then
    echo "$label $program exit $rc" | tee -a "$out/summary.txt"
  else
    grep -E "^ *(decode (1|8) |prompt )|^\| ([0-9]+k?|ragged)" "$runs/out.txt" | sed "s/^/$label: /" \
      | tee -a "$out/summary.txt"
  fi
}
for program in "$@"; do
  if [[ $program == test_cuda_* ]]; then
    run A .gpu/baseline/bin "$program"
    run B .gpu/bundle/bin "$program"
  else
    for r in $(seq 1 "$rounds"); do
      run A .gpu/baseline/bin "$program"
      run B .gpu/bundle/bin "$program"
    done
  fi
done
