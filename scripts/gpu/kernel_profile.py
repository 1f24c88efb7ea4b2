#!/usr/bin/env python3
"""Where a step's device time goes, kernel by kernel, from an Nsight Compute CSV export
(`ncu -i REPORT --csv --page raw`) of an eager engine run (scripts/gpu/run_latency_profile.sh).

Splits the kernels into steps (each ends with the sampler's kernel), says of each step
whether it ran prefill attention, and prints for the last prefill step and the last decode step:
every kernel in order with its time, DRAM bytes and the time those bytes take at READ_RATE, and
per kernel name the count and totals. Writes the same as JSON to OUT_JSON.

  kernel_profile.py CSV OUT_JSON [READ_RATE_TB_S=4.48]
"""
import csv
import json
import sys

path, out_json = sys.argv[1], sys.argv[2]
rate = float(sys.argv[3]) * 1e12 if len(sys.argv) > 3 else 4.48e12

with open(path, newline="") as f:
    rows = [r for r in csv.reader(f)]
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
cols = rows[head]
units = rows[head + 1]  # the unit row follows the header
name_col = cols.index("Kernel Name")


def column(metric):
    i = cols.index(metric)
    scale = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3,
             "msecond": 1e-3, "s": 1.0, "second": 1.0, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6,
             "Gbyte": 1e9}[units[i]]
    return i, scale


t_col, t_scale = column("gpu__time_duration.sum")
r_col, r_scale = column("dram__bytes_read.sum")
w_col, w_scale = column("dram__bytes_write.sum")


def number(text):
    return float(text.replace(",", ""))


kernels = []
for r in rows[head + 2:]:
    if len(r) <= max(t_col, r_col, w_col) or not r[t_col]:
        continue
    # "void ns::(anonymous namespace)::f<T, 4>(Params)" -> "f"
    name = r[name_col].replace("(anonymous namespace)::", "").replace("<unnamed>::", "").split("<")[0].split("(")[0]
    name = name.split()[-1].split("::")[-1]
    kernels.append({"name": name, "s": number(r[t_col]) * t_scale,
                    "read": number(r[r_col]) * r_scale, "write": number(r[w_col]) * w_scale})

steps, current = [], []
for k in kernels:
    current.append(k)
    if k["name"].startswith("sample_rows"):  # the sampler ends a step
        steps.append(current)
        current = []


def describe(step):
    total = sum(k["s"] for k in step)
    moved = sum(k["read"] + k["write"] for k in step)
    by_name = {}
    for k in step:
        b = by_name.setdefault(k["name"], {"count": 0, "s": 0.0, "bytes": 0.0})
        b["count"] += 1
        b["s"] += k["s"]
        b["bytes"] += k["read"] + k["write"]
    return {"kernels": len(step), "kernel_seconds": total, "dram_bytes": moved,
            "floor_seconds": moved / rate, "by_name": by_name, "in_order": step}


def kind(step):
    return "prefill" if any("prefill" in k["name"] for k in step) else "decode"


print(f"{len(kernels)} kernels, {len(steps)} forward steps")
print("| step | kind | kernels | kernel time us | DRAM MB | at read rate us |")
print("| --- | --- | --- | --- | --- | --- |")
for i, s in enumerate(steps):
    d = describe(s)
    print(f"| {i} | {kind(s)} | {d['kernels']} | {d['kernel_seconds'] * 1e6:.1f} | "
          f"{d['dram_bytes'] / 1e6:.1f} | {d['floor_seconds'] * 1e6:.1f} |")

result = {"read_rate_bytes_per_s": rate}
for want in ("prefill", "decode"):
    chosen = [s for s in steps if kind(s) == want]
    if not chosen:
        continue
    d = describe(chosen[-1])
    result[want] = d
    print(f"\nlast {want} step: {d['kernels']} kernels, {d['kernel_seconds'] * 1e6:.1f} us of kernels, "
          f"{d['dram_bytes'] / 1e6:.1f} MB, {d['floor_seconds'] * 1e6:.1f} us at the read rate")
    print("| kernel | count | us | MB | us at read rate | rate / measured |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, b in sorted(d["by_name"].items(), key=lambda x: -x[1]["s"]):
        floor = b["bytes"] / rate
        print(f"| {name} | {b['count']} | {b['s'] * 1e6:.1f} | {b['bytes'] / 1e6:.2f} | "
              f"{floor * 1e6:.1f} | {floor / b['s'] * 100:.0f} % |")
for want in ("prefill", "decode"):
    if want in result:
        print(f"\nlast {want} step in order (us, MB):")
        for k in result[want]["in_order"]:
            print(f"  {k['name']} {k['s'] * 1e6:.2f} {(k['read'] + k['write']) / 1e6:.3f}")
json.dump(result, open(out_json, "w"), indent=1)
