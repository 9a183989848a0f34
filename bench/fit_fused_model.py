#!/usr/bin/env python3
"""Fits the constants of the fused-stage model (tune/model.c,
tune_model_fused_us: softmax_rows(T), edge softmax's three stages in one
kernel) to gop_bench CSVs, per edge order, and reports how well the fit
picks T on graphs it was not fitted on.

    python3 bench/fit_fused_model.py --gopc build-dev/gopc \
        --fit R/csr-order R/teams --held R/csr-order-held-out R/teams-held-out \
        [--file-order]

R = bench/results/2026-11-29-H200-edge-softmax-groups; with --file-order,
the model with the file order's per-lane gather (fit R/input-order
R/input-order-generated). Each folder holds a gop_bench.csv; a graph's
statistics come from `gopc graph` (files: ../shared/datasets/NAME.mtx.gz).
Needs NumPy and SciPy. The model here is the C one, term for term; keep
them alike."""

import argparse
import csv
import math
import os
import re
import subprocess

import numpy as np
from scipy.optimize import minimize

PASSES, C0, LAUNCH_US, RESIDENT = 3, 3.0, 3.0, 132 * 64
NORMAL_MAX = [0, 0.564, 1.029, 1.424, 1.766, 2.070, 2.345]


def expected_max_normal(r):
    k = 0
    while k < 6 and (1 << (k + 1)) <= r:
        k += 1
    return 0 if r <= 1 else NORMAL_MAX[k]


def fused_us(st, T, lat_us, requests_per_us, crit_us, csr_edges):
    rows = 32 / T
    d = min(st["max"], st["mean"] + expected_max_normal(int(rows)) * st["std"])
    warps = math.ceil(st["nv"] / rows)
    steps = PASSES * math.ceil(d / T) + C0
    latency = warps * steps * lat_us / max(1, min(warps, RESIDENT))
    sectors = min(rows * math.ceil(4 * T / 32), max(1.0, 4 * max(st["mean"], T) / T))
    if not csr_edges:
        sectors += 32 * min(1.0, st["mean"] / T)
    requests = warps * steps * sectors / requests_per_us
    critical = (PASSES * math.ceil(st["max"] / T) + C0) * crit_us
    return LAUNCH_US + max(latency, requests, critical)


def read(folders):
    """{graph: {T: us}} of softmax_rows(T), the fastest row of each."""
    out = {}
    for d in folders:
        lines = [x for x in open(os.path.join(d, "gop_bench.csv")) if not x.startswith("#")]
        for r in csv.DictReader(lines):
            m = re.fullmatch(r"softmax_rows\((\d+)\)", r["schedule"])
            if not m or r["ok"] != "1":
                continue
            t = out.setdefault(r["graph"], {})
            T = int(m[1])
            t[T] = min(t.get(T, math.inf), float(r["median_ms"]) * 1000)
    return out


def stats(gopc, graph, datasets):
    spec = graph if ":" in graph else os.path.join(datasets, graph + ".mtx.gz")
    text = subprocess.run([gopc, "graph", spec], capture_output=True, text=True,
                          check=True).stdout
    m = re.search(r"\|V\| (\d+), \|E\| (\d+), degree mean ([\d.]+) std ([\d.]+) max in (\d+)",
                  text)
    return dict(nv=int(m[1]), ne=int(m[2]), mean=float(m[3]), std=float(m[4]), max=int(m[5]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gopc", default="build-dev/gopc")
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--fit", nargs="+", required=True)
    ap.add_argument("--held", nargs="*", default=[])
    ap.add_argument("--file-order", action="store_true")
    a = ap.parse_args()
    csr = not a.file_order
    # a graph measured in a fitted folder is fitted with all its
    # measurements; held out are the graphs only the --held folders have
    every = read(a.fit + a.held)
    fitted = set(read(a.fit))
    fit = {g: t for g, t in every.items() if g in fitted}
    held = {g: t for g, t in every.items() if g not in fitted}
    st = {g: stats(a.gopc, g, a.datasets) for g in list(fit) + list(held)}

    def err(k, data):
        return float(np.mean([abs(math.log(fused_us(st[g], T, *k, csr) / us))
                              for g, ts in data.items() for T, us in ts.items()]))

    best = None
    for x0 in ([0.06, 2e5, 0.06], [0.2, 1e5, 0.1], [0.03, 3e5, 0.05], [0.3, 6e5, 0.15]):
        r = minimize(lambda x: err(np.exp(x), fit), np.log(x0), method="Nelder-Mead",
                     options=dict(maxiter=6000, xatol=1e-5, fatol=1e-7))
        best = r if best is None or r.fun < best.fun else best
    k = np.exp(best.x)
    print(f"{'csr' if csr else 'file'} order: lat_us {k[0]:.4g}, requests_per_us {k[1]:.4g}, "
          f"crit_us {k[2]:.4g}; mean |log error| {best.fun:.3f} on {len(fit)} graphs fitted")
    for name, data in (("fitted", fit), ("held out", held)):
        if not data:
            continue
        picks = []
        for g, ts in sorted(data.items()):
            T = min(ts, key=lambda t: fused_us(st[g], t, *k, csr))
            picks.append(ts[T] / min(ts.values()))
            print(f"  {name:8} {g:34} T {T:2} ({ts[T]:8.1f} us), best T {min(ts, key=ts.get):2}"
                  f" ({min(ts.values()):8.1f}): {picks[-1]:.3f}x")
        gm = math.exp(sum(map(math.log, picks)) / len(picks))
        print(f"{name}: |log error| {err(k, data):.3f}; T picked {gm:.3f}x the best T "
              f"(geomean over {len(picks)} graphs), worst {max(picks):.3f}x")


if __name__ == "__main__":
    main()
