#!/usr/bin/env python3
"""One line for a bench JSON (throughput, latency or serve): LABEL: tok/s[, TPOT p50][, TTFT p50]
[, decode steps and the worker's mean time per decode step, then each bucket's ms per step
(throughput): "prefill 1+ 81.75; decode 1 1.215, 2-8 1.980, ..."].

Used by the scripts/gpu/run_*.sh scripts:  bench_summary.py LABEL JSON
"""
import json
import sys

label, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
if d["bench"] == "latency":
    d = d["levels"][0]
tpot, ttft = d.get("tpot_ms"), d.get("ttft_ms")
extra = f", TPOT p50 {tpot['p50']:.4f} ms" if tpot else ""
extra += f", TTFT p50 {ttft['p50']:.3f} ms (mean {ttft['mean']:.3f})" if ttft else ""
decode = [b for b in d.get("step_times", {}).get("buckets", []) if b["kind"] == "decode"]
if decode:
    steps = sum(b["steps"] for b in decode)
    extra += (f", {steps} decode steps at {sum(b['run_seconds'] for b in decode) / steps * 1e3:.3f}"
              " ms each")
buckets = d.get("step_times", {}).get("buckets", [])
if buckets:
    per = {}
    for b in buckets:
        per.setdefault(b["kind"], []).append(
            f"{b['rows']} {b['run_seconds'] / max(b['steps'], 1) * 1e3:.3f}")
    extra += " (" + "; ".join(f"{kind} {', '.join(v)}" for kind, v in per.items()) + ")"
print(f"{label}: {d['output_tokens_per_s']:.0f} output tok/s{extra}")
