#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: real CUDA errors in a step, through the
# fault hook (tests/faults).
#   1. test_cuda_step_faults, REPEATS times (default 1; a flake shows in a few): an invalid
#      launch ends its step's requests and the engine serves on; an illegal address ends every
#      request and stops the runtime.
#   2. `minivllm serve` on the fault model (CUDA, float32): a request that meets an illegal
#      address gets an error answer, then the server must exit non-zero within 30 s with the log
#      line naming the CUDA error, instead of hanging or serving errors forever.
# Both run without CUDA graphs: the hook is host code in the model's forward(), which a graph
# replay does not run.
# $OUT gets faults.log (each failed run's output, then the count) and serve-faults.log.
#   scripts/gpu/run_faults.sh [REPEATS]
set -uo pipefail
repeats=${1:-1}
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
status=0

passed=0
for i in $(seq 1 "$repeats"); do
  if .gpu/bundle/bin/test_cuda_step_faults > "$out/faults-run.log" 2>&1; then
    passed=$((passed + 1))
  else
    { echo "== run $i failed"; cat "$out/faults-run.log"; } >> "$out/faults.log"
    status=1
  fi
done
rm -f "$out/faults-run.log"
echo "test_cuda_step_faults: $passed of $repeats runs passed" | tee -a "$out/faults.log"

# The fault model: tiny-qwen3 with the fault family's cues (tests/faults/fault_model.hpp's ids).
model=$(mktemp -d)
for f in data/models/tiny-qwen3/*; do [ "$(basename "$f")" = config.json ] || ln -s "$PWD/$f" "$model/"; done
python3 - data/models/tiny-qwen3/config.json "$model/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(architectures=["FaultInjectingQwen3ForCausalLM"], model_type="qwen3_fault_injecting",
         fault_cuda_illegal_address_token_id=151004)
json.dump(c, open(sys.argv[2], "w"), indent=2)
PY
log="$out/serve-faults.log"
"$MINIVLLM_BIN" serve --config configs/tiny-qwen3.toml --port 0 \
  --set "model.path=\"$model\"" --set "runtime.plugin_dirs=[\"$MINIVLLM_FAULT_PLUGIN_DIR\"]" \
  --set 'runtime.backend="cuda"' --set 'model.dtype="float32"' --set model.max_model_len=1024 \
  --set runtime.cuda_graphs=false --set cache.num_blocks=0 --set cache.gpu_memory_utilization=0.02 \
  >"$log.stdout" 2>"$log" &
server=$!
python3 - "$log.stdout" "$server" <<'PY' 2>&1 | tee -a "$out/serve-faults-client.log"
import json, os, re, sys, time, urllib.error, urllib.request
stdout, pid = sys.argv[1], int(sys.argv[2])
deadline = time.time() + 120
while time.time() < deadline:
    m = re.search(r"listening on (http://\S+)", open(stdout).read())
    if m:
        break
    time.sleep(0.2)
else:
    sys.exit("no 'listening on' within 120 s")
url = m.group(1)
def post(body):
    req = urllib.request.Request(url + "/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
healthy = post({"prompt": [1, 2, 3], "max_tokens": 4})
print("healthy request:", healthy)
print("faulty request:", post({"prompt": [151004, 1, 2], "max_tokens": 4}))
if healthy[0] != 200:
    sys.exit("FAIL: the healthy request was not answered 200")
PY
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# The server must be gone within 30 s, non-zero, saying why.
for _ in $(seq 1 60); do kill -0 "$server" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$server" 2>/dev/null; then
  echo "FAIL: the server still runs 30 s after the device was lost" | tee -a "$out/serve-faults-client.log"
  kill -9 "$server"
  status=1
fi
wait "$server"
rc=$?
echo "server exit status: $rc" | tee -a "$out/serve-faults-client.log"
tail -5 "$log" | tee -a "$out/serve-faults-client.log"
if [ "$rc" -eq 0 ] || ! grep -q "the engine stopped (.*cudaErrorIllegalAddress" "$log"; then
  echo "FAIL: expected a non-zero exit and the engine-stopped log line" | tee -a "$out/serve-faults-client.log"
  status=1
else
  echo "PASS: the server stopped with a non-zero exit and said why" | tee -a "$out/serve-faults-client.log"
fi
exit $status
