#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu/bundle.sh: the flash prefill's key splits
# (MINIVLLM_PREFILL_SPLIT=1, off by default until measured), Qwen3-0.6B shape
# (configs/qwen3-0.6b-h200.toml), bf16, most telling first, each line of summary.txt written as it
# completes:
#   the prefill and paged-attention kernel tests, then the step runner's, the goldens' and the
#   engine's with the splits on (tests.log, each program's exit status in summary.txt);
#   gpu_step_modes with the splits off / on / off (128 / 512 / 1,024-token prompts, decode);
#   TTFT of a lone 1,024-token prompt (prefill graphs up to 1,024) and of a lone 512-token one,
#   off / on, two rounds; throughput-256 off / on (within 2 %).
# The bench JSONs go into runs.tar.xz (one file: a call returns only so many).
#   scripts/gpu/run_prefill_split.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
make_model qwen3-0.6b qwen3
bin=.gpu/bundle/bin
{
  for t in test_cuda_prefill_attention test_cuda_paged_attention; do
    "$bin/$t"
    rc=$?
    echo "== $t exit $rc"
  done
  for t in test_cuda_step_runner test_cuda_golden test_cuda_engine; do
    MINIVLLM_PREFILL_SPLIT=1 "$bin/$t"
    rc=$?
    echo "== $t (splits on) exit $rc"
  done
} > "$out/tests.log" 2>&1
grep -E "^== .* exit|FAILED|Failure" "$out/tests.log" | head -40 | tee -a "$out/summary.txt"
for split in 0 1 0; do
  MINIVLLM_PREFILL_SPLIT=$split "$bin/gpu_step_modes" data/models/qwen3-0.6b "$PWD/$bin" \
    > "$out/steps-$split.log" 2>&1
  grep -E "^ +(decode (1|8)|prompt)" "$out/steps-$split.log" | sed "s/^/splits $split: /" \
    | tee -a "$out/summary.txt"
done
# bench LABEL SPLIT PREFILL_GRAPH_TOKENS ARGS...: one bench, summarized.
runs_done=0
bench() {
  local label=$1 split=$2 tokens=$3
  shift 3
  runs_done=$((runs_done + 1))
  local json="$runs/$runs_done.json"
  MINIVLLM_PREFILL_SPLIT=$split "$MINIVLLM_BIN" bench "$@" --config configs/qwen3-0.6b-h200.toml \
    --set "runtime.plugin_dirs=[\"$PWD/$bin\"]" --set model.path=data/models/qwen3-0.6b \
    --set "runtime.cuda_graph_max_prefill_tokens=$tokens" --output "$json" >> "$out/engine.log" 2>&1
  python3 scripts/gpu/bench_summary.py "$label" "$json" | tee -a "$out/summary.txt"
}
for round in 1 2; do
  for split in 0 1; do
    bench "ttft1024 splits $split round $round" "$split" 1024 latency --concurrency 1 \
      --prompt-len 1024 --max-tokens 1 --num-requests 32
    bench "ttft512 splits $split round $round" "$split" 512 latency --concurrency 1 \
      --prompt-len 512 --max-tokens 1 --num-requests 32
  done
done
for split in 0 1; do
  bench "throughput-256 splits $split" "$split" 512 throughput \
    --workload benchmarks/throughput-256.json
done
tar -C "$runs" -cJf "$out/runs.tar.xz" .
