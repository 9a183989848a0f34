#!/usr/bin/env python3
"""gop's fastest checked row per case (gop_bench.csv or .csv.xz) beside the
probe's P = 1 and its fastest P (probe.csv), one line per graph and F.
   python3 compare.py DIR [DIR...]   (each holding both files)"""
import csv, io, lzma, os, sys

for d in sys.argv[1:]:
    path = os.path.join(d, "gop_bench.csv")
    opener = (lambda p: open(p)) if os.path.exists(path) else (lambda p: lzma.open(p + ".xz", "rt"))
    with opener(path) as f:
        rows = [l for l in f if not l.startswith("#")]
    best = {}
    for r in csv.DictReader(io.StringIO("".join(rows))):
        if r["ok"] != "1":
            continue
        k, t = (r["graph"], int(r["F"])), float(r["median_ms"])
        if k not in best or t < best[k][0]:
            best[k] = (t, r["schedule"], float(r["bound_fraction"]))
    probe = {}
    with open(os.path.join(d, "probe.csv")) as f:
        for r in csv.DictReader(l for l in f if not l.startswith("#")):
            probe.setdefault((r["graph"], int(r["F"])), {})[int(r["P"])] = (float(r["ms"]), float(r["pairs_over_E"]), float(r["of_bound"]))
    for k in sorted(best):
        t, s, fr = best[k]
        p = probe.get(k)
        if not p:
            continue
        bp = min(p, key=lambda q: p[q][0])
        print(f"{k[0]:17s} F={k[1]:3d}  gop {t:.4f} ms {s:22s} {100 * fr:5.1f}% | probe P=1 {p[1][0]:.4f}"
              f"  P=4 {p[4][0]:.4f} (pairs {p[4][1]:.2f})  best P={bp:<2d} {p[bp][0]:.4f} {100 * p[bp][2]:5.1f}%"
              f" | P=4 over P=1 {p[1][0] / p[4][0]:.2f}x, gop over best P {t / p[bp][0]:.2f}x")
