#!/usr/bin/env python3
"""bench/choice.py: the untuned schedule choices against the tuned best,
from gop_bench's CSV (bench/gop_bench.c).

usage: bench/choice.py GOP_BENCH.csv[.xz] [--by graph|op|F]

Per case (graph, operator, F) the tuned best is the fastest checked
candidate; the choices are the planned rows `chosen:...` (what `gopc run`
picks with no database: the built-in predictor where it applies),
`untuned:cost_model` (the cost model's own pick) and `default` (the fixed
mapping). Prints each one's time over the best, as geometric means per
group (--by, default graph) and over all cases, with the worst case.
"""
import csv
import lzma
import math
import sys
from collections import defaultdict


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    args = sys.argv[1:]
    by = "graph"
    if "--by" in args:
        i = args.index("--by")
        by = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1 or by not in ("graph", "op", "F"):
        sys.exit(__doc__)
    opener = lzma.open if args[0].endswith(".xz") else open
    with opener(args[0], "rt", newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    cases = defaultdict(list)
    for r in rows:
        if r["ok"] == "1" and float(r["median_ms"] or 0) > 0:
            cases[(r["graph"], r["op"], r["F"])].append(r)
    kinds = [("chosen", lambda r: r["role"].startswith("chosen")),
             ("cost model", lambda r: r["role"] == "untuned:cost_model"),
             ("default", lambda r: r["role"] == "default")]
    groups = defaultdict(lambda: defaultdict(list))
    worst = {k: (0, "") for k, _ in kinds}
    sources = defaultdict(int)
    for key, rs in sorted(cases.items()):
        best = min(float(r["median_ms"]) for r in rs)
        g = {"graph": key[0], "op": key[1], "F": key[2]}[by]
        for name, pick in kinds:
            r = next((r for r in rs if pick(r)), None)
            if r is None:
                continue
            ratio = float(r["median_ms"]) / best
            groups[g][name].append(ratio)
            groups["all"][name].append(ratio)
            if name == "chosen":
                sources[r["role"]] += 1
            if ratio > worst[name][0]:
                worst[name] = (ratio, f"{key[1]} on {key[0]} F={key[2]}: {r['schedule']}")
    print(f"{by:<20} {'cases':>5} " + " ".join(f"{k:>11}" for k, _ in kinds))
    for g in sorted(k for k in groups if k != "all") + ["all"]:
        n = max(len(v) for v in groups[g].values())
        print(f"{g:<20} {n:>5} " + " ".join(f"{geomean(groups[g][k]):>10.3f}x" for k, _ in kinds))
    for k, _ in kinds:
        if worst[k][0]:
            print(f"worst {k}: {worst[k][0]:.2f}x, {worst[k][1]}")
    print("chosen by: " + ", ".join(f"{s} {n}" for s, n in sorted(sources.items())))


if __name__ == "__main__":
    main()
