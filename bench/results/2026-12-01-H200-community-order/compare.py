#!/usr/bin/env python3
"""The fastest checked gop row per op, graph and F of a call's
gop_bench.csv(.xz), with its fraction of the fewest-bytes bound, each
graph beside its community-ordered copy.
    python3 bench/results/2026-12-01-H200-community-order/compare.py CALL_DIR"""
import csv
import lzma
import os
import sys


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "call1"
    path = os.path.join(d, "gop_bench.csv")
    f = open(path) if os.path.exists(path) else lzma.open(path + ".xz", "rt")
    best = {}
    for r in csv.reader(line for line in f if not line.startswith("#")):
        try:
            ms, frac = float(r[12]), float(r[14])
        except (ValueError, IndexError):
            continue
        k = (r[3], r[0], int(r[4]))
        if ms > 0 and (k not in best or ms < best[k][0]):
            best[k] = (ms, frac, r[8])
    print("| op | graph | F | ms | of the bound | schedule |")
    print("|---|---|---:|---:|---:|---|")
    for k in sorted(best):
        ms, frac, s = best[k]
        print(f"| {k[0]} | {k[1]} | {k[2]} | {ms:.4f} | {100 * frac:.1f}% | {s} |")


if __name__ == "__main__":
    main()
