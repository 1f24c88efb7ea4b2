#!/usr/bin/env python3
"""Greedy outputs of two runs of `minivllm generate --json --logprobs 2` over the same prompts,
the first the reference (e.g. TP=1 against TP=2, DP=1 against DP=2). Each request's tokens are
compared up to its first step whose reference top-2 logprob margin is below MARGIN: a near tie,
where bf16 rounding in another layout may pick either token; past it the outputs may part.
Prints one line per request that differs and a summary; exits 1 when any request differs before
its first near tie (or the runs disagree on the requests).

  compare_greedy.py REFERENCE.jsonl OTHER.jsonl [--margin 0.05] [--label TEXT]
"""
import argparse
import json
import sys


def requests(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def compared_tokens(ref, margin):
    """How many of the reference's tokens come before its first near tie."""
    for k, step in enumerate(ref["logprobs"]):
        top = step["top"]
        if len(top) < 2:
            raise ValueError("a step without its top 2 logprobs: run generate with --logprobs 2")
        if top[0][1] - top[1][1] < margin:
            return k
    return len(ref["token_ids"])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("reference")
    p.add_argument("other")
    p.add_argument("--margin", type=float, default=0.05)
    p.add_argument("--label", default="")
    a = p.parse_args()
    ref, other = requests(a.reference), requests(a.other)
    label = a.label or f"{a.other} against {a.reference}"
    if len(ref) != len(other):
        print(f"{label}: {len(ref)} requests against {len(other)}")
        return 1
    compared = total = differing = identical = 0
    for i, (r, o) in enumerate(zip(ref, other)):
        if r["prompt_token_ids"] != o["prompt_token_ids"]:
            print(f"{label}: request {i} has another prompt")
            return 1
        n = compared_tokens(r, a.margin)
        compared += n
        total += len(r["token_ids"])
        identical += r["token_ids"] == o["token_ids"]
        if r["token_ids"][:n] != o["token_ids"][:n]:
            differing += 1
            first = next(k for k in range(n) if k >= len(o["token_ids"])
                         or r["token_ids"][k] != o["token_ids"][k])
            print(f"{label}: request {i} differs at token {first} of the {n} before its near tie")
    verdict = "equal" if differing == 0 else f"{differing} requests differ"
    print(f"{label}: {len(ref)} requests, {compared} of {total} tokens compared (up to each "
          f"request's first top-2 margin below {a.margin}): {verdict}; {identical} identical "
          "in full")
    return 0 if differing == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
