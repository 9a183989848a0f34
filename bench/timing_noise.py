#!/usr/bin/env python3
"""bench/timing_noise.py OUT: the summary of bench/timing_noise.sh.

Reads OUT/{gop,cusparse,pyg}-{events,graph}-{N}.csv (N identical calls of
each driver with each timing method) and prints, per driver and method,
over the rows measured in every call: the spread of a row's time between
the calls (max / min - 1) -- median, 90th percentile and largest -- and,
per driver, the median over rows of the graph-replay time over the event
time. A row timed otherwise than asked (a capture that fell back to
events) is counted apart. Then the median spread per graph. Needs only the
standard library.
"""
import csv
import glob
import os
import re
import statistics
import sys
from collections import defaultdict

PEER_FIELDS = ["peer", "op", "graph", "V", "E", "F", "time_ms", "gbps", "frac_of_bound", "ok",
               "timing", "graph_calls"]


def rows_of(path):
    """(key, ms, timing) of each checked row of one CSV."""
    lines = [ln for ln in open(path) if ln.strip() and not ln.startswith("#")]
    driver = os.path.basename(path).split("-")[0]
    if driver == "gop":
        for r in csv.DictReader(lines):
            if r["ok"] == "1" and float(r["median_ms"]) > 0:
                yield ((r["op"], r["graph"], r["F"], r["role"], r["schedule"]),
                       float(r["median_ms"]), r.get("timing", "events"))
        return
    if lines and lines[0].startswith("peer,"):
        lines = lines[1:]
    for r in csv.DictReader(lines, fieldnames=PEER_FIELDS):
        if r["ok"] == "1" and r["time_ms"] and float(r["time_ms"]) > 0:
            yield (r["peer"], r["op"], r["graph"], r["F"]), float(r["time_ms"]), r["timing"]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def main(out):
    # times[driver][method][key] = [ms per call]; fell[driver][method] = rows timed otherwise
    times = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    fell = defaultdict(lambda: defaultdict(int))
    calls = defaultdict(lambda: defaultdict(int))
    for path in sorted(glob.glob(os.path.join(out, "*-*-*.csv"))):
        m = re.match(r"(gop|cusparse|pyg)-(events|graph)-(\d+)\.csv$", os.path.basename(path))
        if not m:
            continue
        driver, method = m.group(1), m.group(2)
        calls[driver][method] += 1
        for key, ms, timing in rows_of(path):
            if timing != method:
                fell[driver][method] += 1
                continue
            times[driver][method][key].append(ms)
    if not times:
        print(f"no CSVs of bench/timing_noise.sh in {out}")
        return 1
    print("spread of a row's time between identical calls (max / min - 1), per driver and "
          "timing method")
    print(f"{'driver':<9} {'method':<7} {'calls':>5} {'rows':>5} {'median':>8} {'p90':>8} "
          f"{'max':>8} {'graph/events':>13}")
    per_graph = defaultdict(list)
    for driver in ("gop", "cusparse", "pyg"):
        for method in ("events", "graph"):
            t = times[driver][method]
            full = {k: v for k, v in t.items() if len(v) == calls[driver][method] and len(v) > 1}
            if not full:
                continue
            spread = {k: max(v) / min(v) - 1 for k, v in full.items()}
            for k, s in spread.items():
                graph = k[1] if driver == "gop" else k[2]
                per_graph[(driver, method, graph)].append(s)
            ratio = ""
            if method == "graph":
                ev = times[driver]["events"]
                rs = [statistics.median(v) / statistics.median(ev[k]) for k, v in full.items()
                      if ev.get(k)]
                if rs:
                    ratio = f"{statistics.median(rs):.2f}x"
            s = list(spread.values())
            note = f"  ({fell[driver][method]} rows fell back to events)" \
                if fell[driver][method] else ""
            print(f"{driver:<9} {method:<7} {calls[driver][method]:>5} {len(s):>5} "
                  f"{100 * statistics.median(s):>7.1f}% {100 * pct(s, 0.9):>7.1f}% "
                  f"{100 * max(s):>7.1f}% {ratio:>13}{note}")
    print("\nmedian spread per graph")
    graphs = sorted({k[2] for k in per_graph})
    print(f"{'driver':<9} {'method':<7} " + " ".join(f"{g:>10}" for g in graphs))
    for driver in ("gop", "cusparse", "pyg"):
        for method in ("events", "graph"):
            cells = [per_graph.get((driver, method, g)) for g in graphs]
            if any(cells):
                print(f"{driver:<9} {method:<7} " + " ".join(
                    f"{100 * statistics.median(c):>9.1f}%" if c else f"{'-':>10}"
                    for c in cells))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
