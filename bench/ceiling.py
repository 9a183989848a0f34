#!/usr/bin/env python3
"""bench/ceiling.py: how close is each sum to the fastest a kernel could
be, and could any kernel be 2x the best cuSPARSE SpMM?

    python3 bench/ceiling.py GATHER.csv REPORT.csv PROBE.csv
        [--copy-gbps 4234.5] [--floor-ms 0.0032] [--methods lru,panels2,...]

GATHER.csv is what `gop_gather_cache --csv` wrote (the bytes each way of
gathering moves through DRAM and from L2, per graph and F); REPORT.csv is
bench/report.py's report.csv of a run with cuSPARSE (gop's tuned time and
the best peer's per op, graph and F); PROBE.csv is bench/gather_probe.cu's
(the rates at which the SMs gather rows of F floats from L2, 16 MB of
rows, and from DRAM, 4 GB). Per case the ceiling is the least time of the
named ways of gathering (by default those gop has: the plain stream,
panels of 2 and 4, feature tiles), each the longest of: its DRAM time
(the CSR and Y at the copy rate, the rows at the probe's DRAM gather rate
for the row's width), its L2 time (all it moves from L2 at the probe's L2
gather rate) and the floor (the fastest run measured: a launch under
graph replay). The weighted sum (u_mul_e_sum) adds its edge weights once
to DRAM and L2.

Prints per case gop's tuned time as a fraction of the ceiling and the
ceiling's speedup over the best cuSPARSE kernel (what a perfect kernel
would score on the target), then per op their geometric means. An
analysis, not a benchmark: the rates come from bench/gather_probe.cu.
"""
import argparse
import csv
import math
import sys
from collections import defaultdict
from statistics import geometric_mean as gm


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gather")
    ap.add_argument("report")
    ap.add_argument("probe")
    ap.add_argument("--copy-gbps", type=float, default=4234.5)
    ap.add_argument("--floor-ms", type=float, default=0.0032)
    ap.add_argument("--methods", default="lru,panels2,panels4,tiles32,tiles64,tiles128")
    a = ap.parse_args()
    if min(a.copy_gbps, a.floor_ms) <= 0:
        sys.exit("ceiling.py: the copy rate and the floor must be above 0")
    methods = set(a.methods.split(","))

    ways = defaultdict(list)  # (graph, F) -> [(method, bytes...)]
    try:
        with open(a.gather) as f:
            for r in csv.DictReader(f):
                if r["order"] != "none" or r["method"] not in methods:
                    continue
                g = r["graph"].split(".")[0]
                ways[(g, int(r["F"]))].append(
                    (r["method"], int(r["ne"]),
                     *(float(r[k]) for k in ("csr_bytes", "dram_row_bytes", "y_bytes",
                                              "l2_row_bytes"))))
        with open(a.report) as f:
            report = list(csv.DictReader(f))
        l2_rate, dram_rate = {}, {}  # F -> bytes a millisecond
        with open(a.probe) as f:
            for r in csv.DictReader(l for l in f if not l.startswith("#")):
                if r.get("chunk", "64") != "64":
                    continue
                rate = float(r["gather_gbps"]) * 1e6
                if float(r["x_mb"]) == 16:
                    l2_rate[int(r["F"])] = rate
                elif float(r["x_mb"]) >= 1024:
                    dram_rate[int(r["F"])] = rate
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"ceiling.py: {e}")

    if not l2_rate or set(l2_rate) != set(dram_rate):
        sys.exit(f"ceiling.py: {a.probe}: no rates of 16 MB and 4 GB of rows for the same widths")
    copy = a.copy_gbps * 1e6  # bytes a millisecond

    def rates(F):  # the probe's rates for the nearest width measured
        w = min(l2_rate, key=lambda x: abs(math.log2(x / F)))
        return l2_rate[w], min(dram_rate[w], copy)

    rows = []
    for r in report:
        key = (r["graph"], int(r["F"]))
        if key not in ways or r["op"] not in ("copy_u_sum", "u_mul_e_sum"):
            continue
        best = None
        l2, dram = rates(key[1])
        for m, ne, csr, dram_rows, y, l2_rows in ways[key]:
            w = 4.0 * ne if r["op"] == "u_mul_e_sum" else 0.0
            t = max((csr + y + w) / copy + dram_rows / dram, (csr + l2_rows + y + w) / l2,
                    a.floor_ms)
            if best is None or t < best[1]:
                best = (m, t)
        tuned, peer = float(r["tuned_ms"]), float(r["peer_ms"])
        rows.append((r["op"], r["graph"], int(r["F"]), best[0], best[1], tuned, peer))

    print(f"# copy {a.copy_gbps:.1f} GB/s; gathers from L2 / DRAM (GB/s) by F: "
          + ", ".join(f"{F}: {l2_rate[F] / 1e6:.0f} / {dram_rate[F] / 1e6:.0f}" for F in sorted(l2_rate))
          + f"; floor {a.floor_ms * 1e3:.1f} us; ways: {a.methods}")
    print(f"{'op':12s} {'graph':17s} {'F':>4s} {'way':8s} {'ceil_ms':>8s} {'gop_ms':>8s} "
          f"{'of_ceil':>7s} {'cusp_ms':>8s} {'gop/cusp':>8s} {'ceil/cusp':>9s}")
    for op, g, F, m, c, t, p in sorted(rows):
        print(f"{op:12s} {g:17s} {F:4d} {m:8s} {c:8.4f} {t:8.4f} {100 * c / t:6.1f}% {p:8.4f} "
              f"{p / t:7.2f}x {p / c:8.2f}x")
    print()
    for name, key in (("F", lambda r: r[2]), ("graph", lambda r: r[1])):
        groups = defaultdict(list)
        for r in rows:
            groups[key(r)].append(r[4] / r[5])
        print(f"gop's time as a fraction of the ceiling by {name} (both ops, geomean): " +
              ", ".join(f"{k} {100 * gm(v):.0f}%" for k, v in sorted(groups.items())))
    print()
    for op in sorted({r[0] for r in rows}):
        sel = [r for r in rows if r[0] == op]
        print(f"{op}: {len(sel)} cases; gop over cuSPARSE {gm([r[6] / r[5] for r in sel]):.2f}x "
              f"(min {min(r[6] / r[5] for r in sel):.2f}x); the ceiling over cuSPARSE "
              f"{gm([r[6] / r[4] for r in sel]):.2f}x (min {min(r[6] / r[4] for r in sel):.2f}x); "
              f"gop at {100 * gm([r[4] / r[5] for r in sel]):.1f}% of the ceiling in geomean")


if __name__ == "__main__":
    main()
