#!/usr/bin/env bash
# 2026-12-07 call 2: the fixed gpu_prefill_attention_bench (flash vs naive checked again), and
# gpu_step_breakdown at context 1,024 (where a decode step's non-attention time goes at 1-256 rows).
set -uo pipefail
source scripts/gpu/prepare.sh
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
"$bin/gpu_prefill_attention_bench" > "$out/prefill-attention.txt" 2>&1
echo "prefill bench exit $?" | tee -a "$out/summary.txt"
grep -E "^\| [0-9r]" "$out/prefill-attention.txt" | tee -a "$out/summary.txt"
"$bin/gpu_step_breakdown" data/models/qwen3-0.6b "$PWD/$bin" 1024 > "$out/step-breakdown.txt" 2>&1
echo "step breakdown exit $?" | tee -a "$out/summary.txt"
tail -c 6000 "$out/step-breakdown.txt"
