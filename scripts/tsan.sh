#!/usr/bin/env bash
# ThreadSanitizer on the actor tests (tests/actors: the actors, JobThread, the embedding example)
# in a CPU-only tree without the benchmarks: configures build-tsan/ the first time, builds what
# those tests need and runs them. A report fails the run (exit status non-zero). Debian's CAF is
# not instrumented: tests/sanitizers/tsan.supp holds the suppressions, each with its reason.
# Needs scripts/setup.sh's data folder.
#   scripts/tsan.sh [TEST_NAME...]     (default: every test named actors/* but actors/cli_* and
#                                       actors/remote_workers)
# The CLI and remote-worker tests run the launcher under their own fixed timeouts (240 s, 60 s a
# step), which TSan's slowdown overruns; the golden and embedding tests run the same actors
# in-process. history_size=7: the longest per-thread history, so that a report's earlier stack is
# restored and a hand-off through CAF (uninstrumented) shows its CAF frames for the suppression;
# without it actors/threads failed 1 run in 3 on a batch handed scheduler -> worker through CAF,
# its writer's stack "failed to restore".
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-tsan"

if [ ! -f "$build/build.ninja" ]; then
  echo "configuring $build (thread; CPU only; no benchmarks)"
  meson setup "$build" "$root" -Dcuda=disabled -Dbenchmarks=false \
    -Db_sanitize=thread -Db_lundef=false \
    -Doptimization=1 -Ddebug=false -Dcpp_args="-fno-omit-frame-pointer -g1"  # line tables: as asan.sh
fi

if [ $# -gt 0 ]; then tests=("$@")
else mapfile -t tests < <(meson test -C "$build" --list --no-rebuild 2>/dev/null | grep '^actors/' | grep -v -e '^actors/cli_' -e '^actors/remote_workers')
fi
[ ${#tests[@]} -gt 0 ] || { echo "no actor tests found in $build" >&2; exit 1; }

# Only the targets those tests run and depend on (the plugins), not the whole tree; and the
# launcher, which the CLI tests run through MINIVLLM_BIN without depending on it.
mapfile -t targets < <(cd "$build" && python3 - "${tests[@]}" <<'PY'
import json, os, subprocess, sys
names = set(sys.argv[1:])
tests = json.loads(subprocess.check_output(['meson', 'introspect', '--tests', '.']))
targets = json.loads(subprocess.check_output(['meson', 'introspect', '--targets', '.']))
files = {t['id']: t['filename'] for t in targets}
built = {f for fs in files.values() for f in fs}
out = {'minivllm'}
for t in tests:
    if t['name'] not in names:
        continue
    if t['cmd'][0] in built:  # not an interpreter (python3) running a script
        out.add(os.path.relpath(t['cmd'][0]))
    for dep in t['depends']:
        out.update(os.path.relpath(f) for f in files.get(dep, []))
print('\n'.join(sorted(out)))
PY
)
[ ${#targets[@]} -gt 0 ] || { echo "no such test in $build: ${tests[*]}" >&2; exit 1; }
echo "building ${#targets[@]} targets in $build"
ninja -C "$build" "${targets[@]}"

export TSAN_OPTIONS="suppressions=$root/tests/sanitizers/tsan.supp:halt_on_error=1:second_deadlock_stack=1:history_size=7${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
echo "testing ${tests[*]} (TSAN_OPTIONS=$TSAN_OPTIONS)"
# 5-15x slower under TSan than the timeouts were set for (the CLI tests take ~10 minutes each).
meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 2 --timeout-multiplier 8 "${tests[@]}"
