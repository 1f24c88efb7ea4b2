#!/usr/bin/env bash
# Run here (the build machine): package the CUDA build for the GPU machine into .gpu/ (ignored by
# git; name `.gpu` in the device tool's `carry`). Needs a build with the CUDA backend in build/
# and the device-bundle tool (DEVELOPERS.md).
#   scripts/gpu/bundle.sh [DEVICE_BUNDLE]   (default ../shared/tools/device-bundle)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tool=${1:-$root/../shared/tools/device-bundle}
cd "$root"
ninja -C build
rm -rf .gpu
mkdir -p .gpu/data
# Every GPU test (test_cuda_*), GPU benchmark (gpu_*), the launcher, the CPU side of a decode
# step (actor_step_bench, measured on the GPU machine's host), the plugins and the fault hook's
# test-only model family (tests/faults, for scripts/gpu/run_faults.sh).
mapfile -t programs < <(find build/tests build/benchmarks -type f -perm -u+x \
                        \( -name 'test_cuda_*' -o -name 'gpu_*' \); \
                        printf "%s\n" build/minivllm build/benchmarks/actor_step_bench;
                        find build/plugins build/tests/faults -name '*.so')
"$tool" .gpu/bundle "${programs[@]}"
# The programs travel xz-compressed too (~70 MB stripped, over the device call's 64 MiB; ~11 MB
# compressed); scripts/gpu/prepare.sh unpacks them on the GPU machine.
tar -C .gpu/bundle -cf - bin | xz -T2 -6 > .gpu/bin.tar.xz
rm -rf .gpu/bundle/bin
# The commit the build is of (benchmark reports read it from MINIVLLM_COMMIT there).
git describe --always --dirty > .gpu/commit
# Tokenizers travel compressed (the device call carries at most 64 MiB).
tar -C data -cJf .gpu/data/tokenizers.tar.xz tokenizers
du -sh .gpu
