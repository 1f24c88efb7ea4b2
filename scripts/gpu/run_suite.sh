#!/usr/bin/env bash
# Run on the GPU machine, from the repository root, after scripts/gpu/bundle.sh packaged .gpu/:
# every GPU test binary, then the GPU benchmarks. $OUT (or /tmp/gpu-out) gets device.txt,
# summary.txt and logs.tar.xz (the device tool returns at most 8 files).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
logs=$runs

passed=0 failed=0 skipped=0
summary="$out/summary.txt"
: > "$summary"
for t in .gpu/bundle/bin/test_*; do
  name=$(basename "$t")
  "$t" > "$logs/$name.log" 2>&1
  rc=$?
  case $rc in
    0) passed=$((passed + 1)); result=OK ;;
    77) skipped=$((skipped + 1)); result=SKIP ;;
    *) failed=$((failed + 1)); result="FAIL (exit $rc)" ;;
  esac
  echo "$name: $result" | tee -a "$summary"
done
for b in .gpu/bundle/bin/gpu_*; do
  [ -x "$b" ] || continue
  name=$(basename "$b")
  # The whole-model benchmarks need the 0.6B checkpoint: scripts/gpu/run_bench.sh runs them.
  case $name in gpu_step_breakdown|gpu_step_modes) continue ;; esac
  echo "== $name" | tee -a "$summary"
  "$b" 2>&1 | tee "$logs/$name.log" | tail -20 | tee -a "$summary"
done
echo "$passed passed, $failed failed, $skipped skipped" | tee -a "$summary"
tar -C "$logs" -cJf "$out/logs.tar.xz" .
