# Sourced by the scripts/gpu/run_*.sh scripts on the GPU machine after scripts/gpu/bundle.sh
# packaged .gpu/: goes to the repository root, unpacks the tokenizers, makes the tiny demo models
# the way scripts/setup.sh does, exports what the tests read, and writes the device and the commit
# to $out/device.txt. Sets `out` ($OUT, where a device call's results go, made here) and `runs` (a
# scratch folder for the runs' files); defines make_model and with_worker.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
runs=$(mktemp -d)
tar -C .gpu/bundle -xJf .gpu/bin.tar.xz
source .gpu/bundle/env.sh
mkdir -p data
tar -C data -xJf .gpu/data/tokenizers.tar.xz
# make_model NAME FAMILY: random-v1 checkpoint of configs/models/NAME.json with its tokenizer.
make_model() {
  .gpu/bundle/bin/minivllm checkpoint --hf-config "configs/models/$1.json" --out "data/models/$1" \
    --set "runtime.plugin_dirs=[\"$PWD/.gpu/bundle/bin\"]" >/dev/null
  cp "data/tokenizers/$2/tokenizer.json" "data/tokenizers/$2/tokenizer_config.json" "data/models/$1/"
}
make_model tiny-qwen3 qwen3
make_model tiny-llama3 llama3
export MINIVLLM_TEST_DATA="$PWD/tests/data" MINIVLLM_DATA="$PWD/data"
export MINIVLLM_COMMIT=$(cat .gpu/commit 2>/dev/null)
export MINIVLLM_BIN="$PWD/.gpu/bundle/bin/minivllm" MINIVLLM_PLUGIN_DIR="$PWD/.gpu/bundle/bin"
export MINIVLLM_FAULT_PLUGIN_DIR="$MINIVLLM_PLUGIN_DIR"
# The device and the commit: the first lines of every call's record.
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv \
  | tee "$out/device.txt"
echo "commit $MINIVLLM_COMMIT, $(date -u +%F)" | tee -a "$out/device.txt"
# with_worker CMD...: runs CMD (an engine that waits for one remote rank on 127.0.0.1:47400, its
# join token in $runs/token) beside one `minivllm worker` given worker_args (its --set values);
# the worker's stderr goes to $out/worker.log.
worker_args=()
with_worker() {
  "$MINIVLLM_BIN" worker --connect 127.0.0.1:47400 --token-file "$runs/token" "${worker_args[@]}" \
    2>> "$out/worker.log" &
  local worker=$!
  "$@"
  local status=$?
  wait "$worker"
  echo "worker exit $?" >> "$out/worker.log"
  return $status
}
