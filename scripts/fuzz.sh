#!/usr/bin/env bash
# libFuzzer on the parsers (tests/fuzz/, one target per fuzz_<target>.cpp):
#   scripts/fuzz.sh TARGET SECONDS [RUNS]   one target, for SECONDS (or RUNS executions, if sooner)
#   scripts/fuzz.sh all SECONDS [RUNS]      every target, as many at once as there are cores (CI: all 60)
# Builds build-fuzz/ with clang when needed (installing clang and libclang-rt-14-dev from apt if
# they are missing), replays the committed regression inputs (tests/fuzz/regressions/TARGET/),
# then fuzzes from the committed seeds (tests/fuzz/seeds/TARGET/, copied into a scratch corpus
# build-fuzz/corpus/TARGET/ that grows between runs) for SECONDS. Prints each target's executions
# and exits non-zero on any finding: a crash, a sanitizer report, a leak, a timeout or running out
# of memory. A finding's input is written to build-fuzz/findings/TARGET/; once fixed, commit it to
# tests/fuzz/regressions/TARGET/ so that every later run replays it.
# tokenizer_codec reads the real tokenizers from data/ (scripts/setup.sh).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-fuzz"
fuzz="$root/tests/fuzz"
targets=(tokenizer_codec tokenizer_json safetensors toml_config model_config generate_request
         openai_request)

usage() {
  echo "usage: scripts/fuzz.sh TARGET|all SECONDS [RUNS] (targets: ${targets[*]})" >&2
  exit 2
}
[ $# -eq 2 ] || [ $# -eq 3 ] || usage
[[ "$2" =~ ^[0-9]+$ ]] || usage
seconds=$2
runs_limit=${3:--1}  # libFuzzer's -runs: -1 = no limit
[[ "$runs_limit" =~ ^(-1|[0-9]+)$ ]] || usage
if [ "$1" = all ]; then
  chosen=("${targets[@]}")
else
  [[ " ${targets[*]} " == *" $1 "* ]] || usage
  chosen=("$1")
fi

# The longest input each target tries: its seeds' size with room to grow, small enough that
# every execution stays fast.
max_len() {
  case $1 in
    tokenizer_json) echo 8192 ;;
    tokenizer_codec) echo 1024 ;;
    *) echo 4096 ;;
  esac
}

install_clang() {
  local missing=()
  for p in clang libclang-rt-14-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

if [ ! -f "$build/build.ninja" ]; then
  install_clang
  CXX=clang++ meson setup "$build" "$fuzz"
fi
ninja -C "$build" "${chosen[@]/#/fuzz_}"

export MINIVLLM_DATA="${MINIVLLM_DATA:-$root/data}"
# A report stops the run; libFuzzer writes the input that caused it.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# fuzz_target TARGET: replays the target's regression inputs, then fuzzes it for SECONDS; prints
# one summary line (and a finding's report) and returns non-zero on a finding.
fuzz_target() {
  local target=$1
  local exe="$build/fuzz_$target"
  local log="$build/logs/$target.log"
  mkdir -p "$build/findings/$target" "$build/corpus/$target"
  local options=(-max_len="$(max_len "$target")" -rss_limit_mb=2048 -timeout=10
                 -artifact_prefix="$build/findings/$target/")

  # Every committed regression input, once each.
  local regressions=()
  if [ -d "$fuzz/regressions/$target" ]; then
    while IFS= read -r -d '' f; do regressions+=("$f"); done \
      < <(find "$fuzz/regressions/$target" -type f ! -name '*.md' -print0 | sort -z)
  fi
  if [ ${#regressions[@]} -gt 0 ]; then
    if ! "$exe" "${options[@]}" "${regressions[@]}" >"$build/logs/$target.replay.log" 2>&1; then
      echo "fuzz $target: a regression input fails again (log: $build/logs/$target.replay.log)"
      tail -n 30 "$build/logs/$target.replay.log"
      return 1
    fi
    echo "fuzz $target: ${#regressions[@]} regression inputs replayed, none fails"
  fi

  cp -n "$fuzz/seeds/$target"/* "$build/corpus/$target/"
  local start status=0 elapsed runs
  start=$(date +%s)
  "$exe" "${options[@]}" -max_total_time="$seconds" -runs="$runs_limit" -print_final_stats=1 \
    "$build/corpus/$target" >"$log" 2>&1 || status=$?
  elapsed=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if [ -z "$runs" ]; then  # libFuzzer stopped before its final stats: the last status line
    runs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  fi
  if [ "$status" -ne 0 ]; then
    echo "fuzz $target: FOUND a problem after ${runs:-?} executions in ${elapsed} s (exit $status;" \
         "log: $log; input: $build/findings/$target/)"
    grep -m 1 -E 'ERROR: |runtime error: |SUMMARY: ' "$log" || tail -n 20 "$log"
    return 1
  fi
  echo "fuzz $target: ${runs:-?} executions in ${elapsed} s, nothing found"
}

# One target a core at a time (each libFuzzer process uses one); each target's lines are
# printed, in order, once all have run.
mkdir -p "$build/logs"
lanes=$(nproc)
for target in "${chosen[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$lanes" ]; do wait -n || true; done
  ( status=0
    fuzz_target "$target" >"$build/logs/$target.summary" 2>&1 || status=$?
    echo "$status" >"$build/logs/$target.status" ) &
done
wait
failed=()
for target in "${chosen[@]}"; do
  cat "$build/logs/$target.summary"
  [ "$(cat "$build/logs/$target.status")" = 0 ] || failed+=("$target")
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]}"
  exit 1
fi
