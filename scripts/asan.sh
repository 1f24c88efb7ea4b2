#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer (with LeakSanitizer) on a CPU-only tree without
# the benchmarks: builds build-asan/ (configures it the first time, then incrementally) and runs
# the whole test suite on it. A sanitizer report fails its test. Needs scripts/setup.sh's data
# folder. .ci/run calls it (the build first, then the tests, to time them apart).
#   scripts/asan.sh [MESON_TEST_ARGS...]   builds, then runs the tests (or the named ones)
#   scripts/asan.sh --build-only           builds
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-asan"
supp="$root/tests/sanitizers"

if [ ! -f "$build/build.ninja" ]; then
  # -O1 with frame pointers: fast enough under ASan's ~2x, readable stacks. -g1: line tables,
  # all a report's stack needs (full debug info made each file ~30 % slower to compile).
  # b_lundef=false because the sanitizer runtimes' symbols are not linked into the plugins'
  # shared libraries.
  echo "configuring $build (address,undefined; CPU only; no benchmarks)"
  meson setup "$build" "$root" -Dcuda=disabled -Dbenchmarks=false \
    -Db_sanitize=address,undefined -Db_lundef=false \
    -Doptimization=1 -Ddebug=false -Dcpp_args="-fno-omit-frame-pointer -g1"
fi
echo "building $build"
ninja -C "$build"
[ "${1:-}" != --build-only ] || exit 0

# halt_on_error: a report ends the test with a failure instead of scrolling past.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
echo "testing $build (ASAN_OPTIONS=$ASAN_OPTIONS UBSAN_OPTIONS=$UBSAN_OPTIONS)"
# The tests run several times slower under ASan than their timeouts were set for.
meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 2 --timeout-multiplier 4 "$@"
