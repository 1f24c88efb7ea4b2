#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: Nsight Compute's view of the decode split
# kernel, one launch per case (gpu_decode_attention_bench with MINIVLLM_DECODE_BENCH_ONLY, after
# the bench's warm-up launches): speed of light, memory workload, warp states, scheduler,
# occupancy. $OUT gets one text report per case and summary.txt (the lines that compare them).
#   scripts/gpu/run_decode_profile.sh "CACHE BLOCK_SIZE BATCH CONTEXT"...
#   e.g. scripts/gpu/run_decode_profile.sh "bf16 256 256 8192" "fp8_e4m3 256 256 8192"
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for case in "$@"; do
  name=$(echo "$case" | tr ' ' '-')
  MINIVLLM_DECODE_BENCH_ONLY="$case" "$ncu" --clock-control none -k regex:decode_split \
    --launch-skip 5 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
    --section ComputeWorkloadAnalysis .gpu/bundle/bin/gpu_decode_attention_bench \
    > "$out/ncu-$name.txt" 2>&1
  echo "== $case (exit $?)" >> "$out/summary.txt"
  grep -E "^\| |Duration|DRAM Throughput|Memory Throughput|DRAM Frequency|Stall|Issued Warp|No Eligible|Active Warps Per|Achieved Occupancy|Registers Per|Dynamic Shared|Static Shared|L2 Hit Rate|L1/TEX Hit|Executed Ipc|Warp Cycles Per Issued|Compute \(SM\) Throughput|dram__bytes|Mem Busy|Max Bandwidth" \
    "$out/ncu-$name.txt" >> "$out/summary.txt"
done
cat "$out/summary.txt"
