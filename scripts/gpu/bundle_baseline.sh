#!/usr/bin/env bash
# Run here after scripts/gpu/bundle.sh: packages another build's launcher and plugins (the
# "before" of an A/B, e.g. a worktree of an earlier commit built with -Dbenchmarks=false) into
# .gpu/baseline, for scripts/gpu/run_ab.sh; with PROGRAM arguments (paths inside BUILD_DIR, e.g.
# benchmarks/gpu_step_modes) those too, for scripts/gpu/run_kernel_ab.sh. DEVICE_BUNDLE names
# the device-bundle tool (default ../shared/tools/device-bundle).
#   scripts/gpu/bundle_baseline.sh BUILD_DIR [PROGRAM...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "$1" && pwd)
shift
tool=${DEVICE_BUNDLE:-$root/../shared/tools/device-bundle}
cd "$root"
rm -rf .gpu/baseline .gpu/baseline-bin.tar.xz
"$tool" .gpu/baseline "$build/minivllm" $(find "$build/plugins" -name '*.so') \
  "${@/#/$build/}"
tar -C .gpu/baseline -cf - bin | xz -T2 -6 > .gpu/baseline-bin.tar.xz
rm -rf .gpu/baseline/bin
git -C "$build/.." describe --always --dirty > .gpu/baseline-commit 2>/dev/null || echo unknown > .gpu/baseline-commit
du -sh .gpu
