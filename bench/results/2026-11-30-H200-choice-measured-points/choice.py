#!/usr/bin/env python3
"""Per case of a gop_bench CSV (plain or .xz): the chosen row's time and
the cost model's untuned pick's over the fastest checked row, and their
geometric means.   python3 choice.py gop_bench.csv.xz"""
import csv, io, lzma, math, sys

path = sys.argv[1]
with (lzma.open(path, "rt") if path.endswith(".xz") else open(path)) as f:
    rows = [l for l in f if not l.startswith("#")]
cases = {}
for r in csv.DictReader(io.StringIO("".join(rows))):
    if r["ok"] != "1":
        continue
    d = cases.setdefault((r["graph"], r["op"], int(r["F"])), {"t": {}, "chosen": None, "model": None})
    d["t"][r["schedule"]] = min(float(r["median_ms"]), d["t"].get(r["schedule"], math.inf))
    if r["role"].startswith("chosen"):
        d["chosen"] = r["schedule"]
    if r["role"].startswith("untuned:cost"):
        d["model"] = r["schedule"]
lp = lm = 0.0
for k, d in sorted(cases.items()):
    best = min(d["t"].values())
    p, m = d["t"][d["chosen"]] / best, d["t"][d["model"]] / best
    lp, lm = lp + math.log(p), lm + math.log(m)
    print(f"{k[0]:28s} {k[1]:12s} F={k[2]:3d}  predictor {d['chosen']:22s} {p:.3f}"
          f"  cost model {d['model']:22s} {m:.3f}  best {min(d['t'], key=d['t'].get)} {best:.4f} ms")
n = len(cases)
print(f"{n} cases: predictor {math.exp(lp / n):.3f}x the best measured, cost model {math.exp(lm / n):.3f}x")
