#!/usr/bin/env python3
"""Puts gop's GPU suite timings beside the peers' (bench/peers), per op,
graph and width: gop's best schedule, gop's default schedule, the best
peer, and the speedup of gop's best over the best peer.

usage: bench/compare.py SUITE.csv PEERS.csv [> table.md]

Both files must come from the same kind of GPU; the script says which GPU
each came from. Bytes and bounds use the same fewest-bytes formula on both
sides (bench/README.md), so fractions of the bound are comparable.
"""
import csv
import math
import sys
from collections import defaultdict


def read_csv(path):
    with open(path) as f:
        comments = []
        lines = []
        for line in f:
            (comments if line.startswith("#") else lines).append(line)
    rows = [r for r in csv.DictReader(lines) if r.get("F") and r.get("ok") == "1"]
    return comments, rows


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    _, suite = read_csv(sys.argv[1])
    peer_comments, peers = read_csv(sys.argv[2])
    gop = defaultdict(list)
    for r in suite:
        if r.get("median_ms") and float(r["median_ms"]) > 0:
            graph = r["graph"].replace(".mtx.gz", "")
            F = int(r["F"]) if r["op"] != "edge_softmax" else 1
            gop[(r["op"], graph, F)].append((float(r["median_ms"]), r["schedule"],
                                             float(r["bound_fraction"])))
    best_peer = {}
    for r in peers:
        if r["peer"].startswith("cusparse_") and r["peer"] not in ("cusparse_best", "cusparse_sddmm"):
            continue  # cusparse_best already holds the best algorithm
        key = (r["op"], r["graph"], int(r["F"]))
        t = float(r["time_ms"])
        if key not in best_peer or t < best_peer[key][0]:
            best_peer[key] = (t, r["peer"], float(r["frac_of_bound"]))
    print("peers:", " ".join(c.strip("# \n") for c in peer_comments[:1]))
    print()
    print("| op | graph | F | gop best schedule | gop ms | % bound | gop default ms "
          "| best peer | peer ms | % bound | gop best / peer |")
    print("|---|---|---:|---|---:|---:|---:|---|---:|---:|---:|")
    speedups = defaultdict(list)
    for key in sorted(gop, key=lambda k: (k[0], k[1], k[2])):
        runs = sorted(gop[key])
        best = runs[0]
        default = [x for x in runs if x[1] == "default"]
        peer = best_peer.get(key)
        if not peer:
            continue
        s = peer[0] / best[0]
        speedups[key[0]].append(s)
        print(f"| {key[0]} | {key[1]} | {key[2]} | {best[1]} | {best[0]:.4f} | "
              f"{100 * best[2]:.1f} | {default[0][0]:.4f} | {peer[1]} | {peer[0]:.4f} | "
              f"{100 * peer[2]:.1f} | {s:.2f}x |" if default else "")
    print()
    print("| op | cases | geometric-mean speedup of gop's best over the best peer | min | max |")
    print("|---|---:|---:|---:|---:|")
    for op, v in sorted(speedups.items()):
        g = math.exp(sum(math.log(x) for x in v) / len(v))
        print(f"| {op} | {len(v)} | {g:.2f}x | {min(v):.2f}x | {max(v):.2f}x |")


if __name__ == "__main__":
    main()
