#!/usr/bin/env python3
"""The long workload of the FP8 KV cache issue: 64 requests, prompts of 4,096-8,192 random token
ids (uniform in [0, 10000), as throughput-256's), outputs of 128-512 tokens, temperature 0.6, EOS
ignored. The same seed gives the same file (Python's Mersenne Twister).
  benchmarks/make_long_workload.py [--seed 20261204] [--out long-64.json]
Run it with `minivllm bench throughput --workload FILE --set model.max_model_len=8704`."""
import argparse
import json
import random

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=20261204)
parser.add_argument("--requests", type=int, default=64)
parser.add_argument("--out", default="long-64.json")
args = parser.parse_args()
rng = random.Random(args.seed)
requests = []
for _ in range(args.requests):
    prompt_len = rng.randint(4096, 8192)
    requests.append({"prompt_token_ids": [rng.randrange(10000) for _ in range(prompt_len)],
                     "max_tokens": rng.randint(128, 512)})
workload = {"name": f"long-{args.requests}-seed-{args.seed}", "temperature": 0.6,
            "ignore_eos": True, "requests": requests}
with open(args.out, "w") as f:
    json.dump(workload, f, separators=(",", ":"))
