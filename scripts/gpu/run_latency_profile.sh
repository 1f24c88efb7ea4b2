#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: where single-stream latency goes, Qwen3-0.6B
# shape (configs/qwen3-0.6b-h200.toml), bf16. $OUT gets:
#   kernels.txt / kernels.json  every kernel of a 128-token prefill and of a c=1 decode step,
#                               timed by Nsight Compute one at a time (eager, no graphs), with its
#                               DRAM bytes (scripts/gpu/kernel_profile.py);
#   steps.log                   gpu_step_modes (graph step wall time by batch size) and
#                               gpu_step_breakdown (per-op event times, eager), context 1,024;
#   summary.txt                 bench latency at c=1 and c=8, TTFT of a lone 1,024-token prompt.
#   scripts/gpu/run_latency_profile.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
config=(--config configs/qwen3-0.6b-h200.toml --set "runtime.plugin_dirs=[\"$PWD/$bin\"]"
        --set model.path=data/models/qwen3-0.6b)
for b in gpu_step_modes gpu_step_breakdown; do
  echo "== $b"
  "$bin/$b" data/models/qwen3-0.6b "$PWD/$bin"
done > "$out/steps.log" 2>&1
# The engine's own latency figures, before the profiler touches anything.
for c in 1 8; do
  "$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency $c --output "$runs/latency-c$c.json"
  python3 scripts/gpu/bench_summary.py "latency c=$c" "$runs/latency-c$c.json" | tee -a "$out/summary.txt"
done > "$out/bench.log" 2>&1
"$MINIVLLM_BIN" bench latency "${config[@]}" --concurrency 1 --prompt-len 1024 --max-tokens 1 \
  --output "$runs/ttft-1024.json" >> "$out/bench.log" 2>&1
python3 scripts/gpu/bench_summary.py "TTFT 1024" "$runs/ttft-1024.json" | tee -a "$out/summary.txt"
# One request of 128 prompt tokens and 4 output tokens, every kernel profiled (the L2 is not
# flushed between kernels, as in a real step; clocks left as they are).
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
"$ncu" --clock-control none --cache-control none \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  -o "$runs/c1" -f "$MINIVLLM_BIN" bench latency "${config[@]}" --set runtime.cuda_graphs=false \
  --concurrency 1 --num-requests 1 --prompt-len 128 --max-tokens 4 --output "$runs/ncu-run.json" \
  > "$out/ncu.log" 2>&1
"$ncu" -i "$runs/c1.ncu-rep" --csv --page raw \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum > "$runs/c1.csv"
python3 scripts/gpu/kernel_profile.py "$runs/c1.csv" "$out/kernels.json" > "$out/kernels.txt"
xz -c "$runs/c1.csv" > "$out/kernels.csv.xz"
cat "$out/summary.txt"
grep -A40 "^last decode" "$out/kernels.txt"
grep -B2 -A3 "^| step" "$out/kernels.txt" | head -5
grep -E "decode b=1 |b=1|prefill 1x1024" "$out/steps.log" | head -20
