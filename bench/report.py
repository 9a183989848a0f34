#!/usr/bin/env python3
"""bench/report.py: gop beside its peers, from one run of bench/run-all.sh.

usage: bench/report.py GOP_BENCH.csv PEERS.csv OUTDIR
       bench/report.py figures [--out DIR]     (the README's figures)

Reads gop_bench's CSV (bench/gop_bench.c: every candidate schedule of every
operator x graph x width, checked and timed) and the peers' CSV
(bench/peers/run_peers.sh: cuSPARSE, PyTorch Geometric, torch), both from
the same GPU in the same run, and writes to OUTDIR:
  report.md     per case: gop tuned (the fastest checked candidate), gop
                chosen (what `gopc run` picks with no database: predictor,
                else cost model), gop default, the best peer, % of the
                fewest-bytes bound, speedups; then each issue-6 target with
                the measured value and whether it is met; the cost model's
                rank correlation with the measured times
  report.csv    the same per case, machine-readable, with how each side
                was timed (tuned_timing, peer_timing: graph replay or
                events; bench/README.md, Timing)
  speedup.svg   gop tuned over the best peer, per operator and graph
  heatmap.svg   uGrapher's figure 18: time over grouping x tiling for the
                one case gop_bench measured on the whole warp_edge grid
Prints the summary (targets and geometric means) last.

`figures` draws, from the recorded results named in FIGURES below, the SVG
plots that docs/results.md and the README embed, into docs/figures/ (or
--out DIR): gop over the best cuSPARSE SpMM and over PyG per graph and
width (speed-up bars on a log scale, the 1x line drawn), the fraction of
the fewest-bytes bound per graph, and the training loss curves of gop and
PyG. It needs matplotlib (Debian: apt-get install python3-matplotlib; else
pip install matplotlib); the rest of this script needs nothing beyond the
standard library. The SVGs carry no date and fixed ids, so drawing them
again from the same data gives the same files.
"""
import csv
import math
import os
import sys
from collections import defaultdict

# Which peers each target compares against (bench/README.md lists them).
CUSPARSE_SPMM = "cusparse_best"  # the fastest cuSPARSE SpMM algorithm per case
TARGETS = [
    # (label, ops, peer filter, goal geomean speedup, floor per case or None)
    ("weighted sum vs best cuSPARSE SpMM", ["u_mul_e_sum"], [CUSPARSE_SPMM], 1.5, 0.95),
    ("unweighted sum vs best cuSPARSE SpMM", ["copy_u_sum"], [CUSPARSE_SPMM], None, None),
    ("max aggregation vs PyG scatter", ["copy_u_max"], ["pyg_scatter"], 5.0, None),
    ("mean aggregation vs PyG scatter", ["copy_u_mean"], ["pyg_scatter"], 5.0, None),
    ("u_dot_v vs cusparseSDDMM", ["u_dot_v"], ["cusparse_sddmm"], 3.0, None),
    ("edge softmax vs PyG softmax", ["edge_softmax"], ["pyg_softmax", "pyg_softmax_ptr"], 3.0,
     None),
    ("u_add_v vs torch gather", ["u_add_v"], ["torch_gather"], None, None),
]


def read(path):
    comments, lines = [], []
    with open(path) as f:
        for line in f:
            (comments if line.startswith("#") else lines).append(line)
    return comments, list(csv.DictReader(lines))


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r
    if len(xs) < 3:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def key_F(op, F):
    return 1 if op == "edge_softmax" else int(F)


def svg_bars(path, groups, title):
    """groups: list of (op, [(graph, speedup)]): one panel of bars per op,
    log scale, a line at 1 (parity with the best peer)."""
    w_bar, gap, h = 14, 24, 260
    n = sum(len(g[1]) for g in groups)
    width = 80 + n * w_bar + gap * len(groups)
    lo, hi = math.log10(0.05), math.log10(50)

    def y(v):
        v = min(max(math.log10(max(v, 1e-9)), lo), hi)
        return 30 + (hi - v) / (hi - lo) * h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h + 150}" '
           'font-family="sans-serif" font-size="10">',
           f'<text x="10" y="16" font-size="13">{title}</text>']
    for t in (0.1, 0.5, 1, 2, 5, 10):
        out.append(f'<line x1="60" x2="{width}" y1="{y(t):.1f}" y2="{y(t):.1f}" '
                   f'stroke="{"#000" if t == 1 else "#ddd"}"/>')
        out.append(f'<text x="55" y="{y(t) + 3:.1f}" text-anchor="end">{t}x</text>')
    x = 70
    for op, bars in groups:
        out.append(f'<text x="{x}" y="{h + 140}" font-size="11">{op}</text>')
        for graph, s in bars:
            top, base = min(y(s), y(1)), max(y(s), y(1))
            color = "#2a7" if s >= 1 else "#c44"
            out.append(f'<rect x="{x}" y="{top:.1f}" width="{w_bar - 2}" '
                       f'height="{max(base - top, 1):.1f}" fill="{color}">'
                       f'<title>{op} {graph}: {s:.2f}x</title></rect>')
            out.append(f'<text transform="translate({x + 9},{h + 36}) rotate(-90)" '
                       f'text-anchor="end">{graph}</text>')
            x += w_bar
        x += gap
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def svg_heatmap(path, cells, title):
    """cells: {(G, T): ms}: rows G, columns T, darker is slower."""
    Gs = sorted({g for g, _ in cells})
    Ts = sorted({t for _, t in cells})
    cw, ch = 70, 28
    lo, hi = min(cells.values()), max(cells.values())
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{120 + cw * len(Ts)}" '
           f'height="{80 + ch * len(Gs)}" font-family="sans-serif" font-size="11">',
           f'<text x="10" y="16" font-size="13">{title}</text>',
           f'<text x="{60 + cw * len(Ts) / 2}" y="36">tiling T</text>',
           f'<text transform="translate(14,{50 + ch * len(Gs) / 2}) rotate(-90)">grouping G'
           '</text>']
    for j, t in enumerate(Ts):
        out.append(f'<text x="{70 + j * cw + cw / 2}" y="52" text-anchor="middle">{t}</text>')
    for i, g in enumerate(Gs):
        out.append(f'<text x="50" y="{60 + i * ch + ch / 2 + 4}" text-anchor="end">{g}</text>')
        for j, t in enumerate(Ts):
            v = cells.get((g, t))
            if v is None:
                continue
            f = (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo) or 1)
            shade = int(235 - 180 * f)
            out.append(f'<rect x="{70 + j * cw}" y="{60 + i * ch}" width="{cw - 2}" '
                       f'height="{ch - 2}" fill="rgb({shade},{shade},255)"/>')
            out.append(f'<text x="{70 + j * cw + cw / 2}" y="{60 + i * ch + ch / 2 + 4}" '
                       f'text-anchor="middle">{v:.3f}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    gop_comments, gop_rows = read(sys.argv[1])
    peer_comments, peer_rows = read(sys.argv[2])
    outdir = sys.argv[3]
    os.makedirs(outdir, exist_ok=True)

    cases = defaultdict(list)  # (op, graph, F) -> gop rows
    for r in gop_rows:
        cases[(r["op"], r["graph"], key_F(r["op"], r["F"]))].append(r)
    peers = defaultdict(dict)  # (op, graph, F) -> {peer: (ms, frac)}
    for r in peer_rows:
        if r.get("ok") != "1":
            continue
        k = (r["op"], r["graph"], int(r["F"]))
        # (ms, fraction of the bound, how it was timed: CSVs before
        # 2026-11-28 have no timing column and were timed with events)
        peers[k][r["peer"]] = (float(r["time_ms"]), float(r["frac_of_bound"]),
                               r.get("timing") or "events")

    table, failures, corr = [], [], []
    for k in sorted(cases):
        rows = cases[k]
        ok = [r for r in rows if r["ok"] == "1" and float(r["median_ms"]) > 0]
        failures += [r for r in rows if r["ok"] != "1"]
        if not ok:
            continue
        best = min(ok, key=lambda r: float(r["median_ms"]))
        default = next((r for r in ok if r["role"] == "default"), None)
        chosen = next((r for r in ok if r["role"].startswith("chosen")), None)
        # the cost model's own pick, planned beside the predictor's
        costpick = next((r for r in ok if r["role"] == "untuned:cost_model"), None)
        model = [r for r in ok if r["role"] == "model"]
        rho = spearman([float(r["model_us"]) for r in model], [float(r["median_ms"]) for r in model])
        if rho is not None:
            corr.append(rho)
        p = peers.get(k, {})
        peer_pool = {n: v for n, v in p.items()
                     if not (n.startswith("cusparse_") and n not in (CUSPARSE_SPMM, "cusparse_sddmm"))}
        bp = min(peer_pool.items(), key=lambda kv: kv[1][0]) if peer_pool else None
        t = float(best["median_ms"])
        table.append({
            "op": k[0], "graph": k[1], "F": k[2], "V": best["V"], "E": best["E"],
            "tuned_schedule": best["schedule"], "tuned_ms": t,
            "tuned_frac": float(best["bound_fraction"]),
            "chosen_schedule": chosen["schedule"] if chosen else "",
            "chosen_source": chosen["role"].split(":", 1)[1] if chosen else "",
            "chosen_ms": float(chosen["median_ms"]) if chosen else float("nan"),
            "costmodel_schedule": costpick["schedule"] if costpick else "",
            "costmodel_ms": float(costpick["median_ms"]) if costpick else float("nan"),
            "default_ms": float(default["median_ms"]) if default else float("nan"),
            "best_peer": bp[0] if bp else "", "peer_ms": bp[1][0] if bp else float("nan"),
            "peer_frac": bp[1][1] if bp else float("nan"),
            "speedup": bp[1][0] / t if bp else float("nan"),
            "checked_against": best["checked_against"],
            "tuned_timing": best.get("timing") or "events",
            "peer_timing": bp[1][2] if bp else "",
            "peers": p,
        })

    fields = ["op", "graph", "F", "V", "E", "tuned_schedule", "tuned_ms", "tuned_frac",
              "chosen_schedule", "chosen_source", "chosen_ms", "costmodel_schedule",
              "costmodel_ms", "default_ms", "best_peer",
              "peer_ms", "peer_frac", "speedup", "checked_against", "tuned_timing",
              "peer_timing"]
    with open(os.path.join(outdir, "report.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for row in table:
            w.writerow(row)

    lines = []
    gpu = " ".join(c.strip("# \n") for c in gop_comments[:1])
    lines.append(f"gop: {gpu}; peers: {' '.join(c.strip('# ').strip() for c in peer_comments[:2])}")
    lines.append("")
    lines.append("## Targets (issue 6)")
    lines.append("")
    lines.append("| target | cases | geomean speedup | min | max | goal | met |")
    lines.append("|---|---:|---:|---:|---:|---|---|")
    summary = []
    for label, ops, pnames, goal, floor in TARGETS:
        sp = []
        for row in table:
            if row["op"] not in ops:
                continue
            cand = [row["peers"][n][0] for n in pnames if n in row["peers"]]
            if cand:
                sp.append(min(cand) / row["tuned_ms"])
        if not sp:
            continue
        g = geomean(sp)
        met = "" if goal is None else ("yes" if g >= goal and (floor is None or min(sp) >= floor)
                                         else "no")
        goal_s = "" if goal is None else f">= {goal}x" + (f", each >= {floor}x" if floor else "")
        lines.append(f"| {label} | {len(sp)} | {g:.2f}x | {min(sp):.2f}x | {max(sp):.2f}x | "
                     f"{goal_s} | {met} |")
        summary.append(f"{label}: geomean {g:.2f}x (min {min(sp):.2f}x, max {max(sp):.2f}x) over "
                       f"{len(sp)} cases" + (f"; goal {goal_s}: {met}" if goal else ""))
    big = [r for r in table if int(r["E"]) > 1_000_000 and r["F"] >= 128]
    if big:
        fr = [r["tuned_frac"] for r in big]
        n50 = sum(1 for x in fr if x >= 0.5)
        lines.append(f"| graphs > 1M edges, F >= 128: fraction of the fewest-bytes bound | "
                     f"{len(fr)} | {geomean(fr) * 100:.1f}% | {min(fr) * 100:.1f}% | "
                     f"{max(fr) * 100:.1f}% | >= 50% | {n50} of {len(fr)} |")
        summary.append(f"graphs > 1M edges at F >= 128: {geomean(fr) * 100:.1f}% of the "
                       f"fewest-bytes bound in geomean, {n50} of {len(fr)} cases at >= 50%")
    chosen = [r["chosen_ms"] / r["tuned_ms"] for r in table if not math.isnan(r["chosen_ms"])]
    default = [r["default_ms"] / r["tuned_ms"] for r in table if not math.isnan(r["default_ms"])]
    if chosen:
        summary.append(f"gop chosen (no database) over gop tuned: geomean {geomean(chosen):.3f}x, "
                       f"worst {max(chosen):.2f}x")
    costm = [r["costmodel_ms"] / r["tuned_ms"] for r in table
             if not math.isnan(r["costmodel_ms"])]
    if costm:
        summary.append(f"the cost model's pick over gop tuned: geomean {geomean(costm):.3f}x, "
                       f"worst {max(costm):.2f}x")
    if default:
        summary.append(f"gop default over gop tuned: geomean {geomean(default):.3f}x, "
                       f"worst {max(default):.2f}x")
    if corr:
        summary.append(f"cost model vs measured, Spearman over each case's candidates: mean "
                       f"{sum(corr) / len(corr):.2f} over {len(corr)} cases")
    summary.append(f"{len(failures)} candidate runs failed their check or their run")
    # How the numbers were timed: graph replay or events, per side; a case
    # whose two sides were timed differently (a capture that failed and
    # fell back to events) is named, since the ratio then mixes methods.
    def methods(values):
        n = defaultdict(int)
        for v in values:
            n[v or "events"] += 1
        return ", ".join(f"{c} by {m}" for m, c in sorted(n.items()))
    summary.append(f"timing: gop rows {methods(r.get('timing') for r in gop_rows)}; peer rows "
                   f"{methods(r.get('timing') for r in peer_rows)} (bench/README.md, Timing)")
    mixed = [r for r in table if r["peer_timing"] and r["peer_timing"] != r["tuned_timing"]]
    if mixed:
        summary.append(f"{len(mixed)} cases compare a gop time and a peer time timed "
                       f"differently: " + ", ".join(
                           f"{r['op']} {r['graph']} F={r['F']} (gop {r['tuned_timing']}, "
                           f"{r['best_peer']} {r['peer_timing']})" for r in mixed[:10]))
    lines.append("")
    lines.append("## Per case")
    lines.append("")
    lines.append("| op | graph | F | gop tuned | ms | % bound | chosen ms | default ms | best peer "
                 "| peer ms | % bound | tuned / peer |")
    lines.append("|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|")
    for r in table:
        lines.append(f"| {r['op']} | {r['graph']} | {r['F']} | {r['tuned_schedule']} | "
                     f"{r['tuned_ms']:.4f} | {r['tuned_frac'] * 100:.1f} | {r['chosen_ms']:.4f} | "
                     f"{r['default_ms']:.4f} | {r['best_peer']} | {r['peer_ms']:.4f} | "
                     f"{r['peer_frac'] * 100:.1f} | {r['speedup']:.2f}x |")
    if failures:
        lines.append("")
        lines.append("## Failed candidates")
        lines.append("")
        for r in failures[:50]:
            lines.append(f"- {r['op']} {r['graph']} F={r['F']} {r['schedule']}")
    lines.append("")
    lines.append("## Summary")
    lines.append("")
    lines += ["- " + s for s in summary]
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

    groups = []
    for op in sorted({r["op"] for r in table}):
        per_graph = defaultdict(list)
        for r in table:
            if r["op"] == op and not math.isnan(r["speedup"]):
                per_graph[r["graph"]].append(r["speedup"])
        if per_graph:
            groups.append((op, [(g, geomean(v)) for g, v in sorted(per_graph.items())]))
    if groups:
        svg_bars(os.path.join(outdir, "speedup.svg"), groups,
                 "gop tuned over the best peer (geomean over F), log scale")

    grid = [r for r in gop_rows if r["role"] == "grid" and r["ok"] == "1"]
    if grid:
        cells = {}
        for r in grid:
            inside = r["schedule"].split("(", 1)[1].rstrip(")")
            G, T = (int(x) for x in inside.split(","))
            cells[(G, T)] = float(r["median_ms"])
        r0 = grid[0]
        svg_heatmap(os.path.join(outdir, "heatmap.svg"), cells,
                    f"{r0['op']} on {r0['graph']}, F={r0['F']}: warp_edge(G, T), ms")

    print("\n".join(lines[:lines.index("## Per case")]))
    print("\n".join("- " + s for s in summary))


# ---- figures: the README's and docs/results.md's plots, from recorded runs ----

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
# The recorded runs each figure is drawn from (folders of bench/results/):
# the latest benchmark of each sum, gop and its peers timed in one call.
FIGURES = {
    "weighted": "2026-11-29-H200-aggregation-cusparse/report/report.csv",
    "weighted_peers": "2026-11-29-H200-aggregation-cusparse/peers/peers.csv",
    "unweighted": "2026-11-29-H200-aggregation-cusparse/report/report.csv",
    "unweighted_peers": "2026-11-29-H200-aggregation-cusparse/peers/peers.csv",
    "train": "2026-11-27-H100-train-captured/train.csv",
}
GPU_DATE = "H200, 2026-11-29"  # the aggregation runs'
TRAIN_GPU_DATE = "H100, 2026-11-27"  # the training run's
PYG_PEERS = ("pyg_spmm", "pyg_scatter")  # PyG's ways to aggregate (bench/README.md)
WIDTHS_COLOURS = ("#c6dbef", "#9ecae1", "#6baed6", "#3182bd", "#08519c")
MODEL_NAMES = {"gcn": "GCN", "gat": "GAT", "sage": "GraphSAGE", "gin": "GIN"}


def _report_rows(rel, op):
    """report.csv rows of `op` from a recorded run: graph -> {F: row}."""
    _, rows = read(os.path.join(RESULTS, rel))
    out = defaultdict(dict)
    for r in rows:
        if r["op"] == op:
            out[r["graph"]][int(r["F"])] = r
    return out


def _pyg_best(rel, op):
    """The fastest checked PyG peer per (graph, F) of a recorded peers.csv."""
    _, rows = read(os.path.join(RESULTS, rel))
    best = {}
    for r in rows:
        if r["op"] == op and r["peer"] in PYG_PEERS and r["ok"] == "1":
            k = (r["graph"], int(r["F"]))
            t = float(r["time_ms"])
            if k not in best or t < best[k]:
                best[k] = t
    return best


def _by_edges(table):
    """The graphs of a report table, smallest |E| first."""
    return sorted(table, key=lambda g: int(next(iter(table[g].values()))["E"]))


def _bars(ax, graphs, widths, value, log=True):
    """Grouped bars: one group per graph, one bar per width. Returns the
    values drawn."""
    n = len(widths)
    w = 0.8 / n
    vals = []
    for i, F in enumerate(widths):
        xs, ys = [], []
        for j, g in enumerate(graphs):
            v = value(g, F)
            if v is None or not v > 0:
                continue
            xs.append(j - 0.4 + w * (i + 0.5))
            ys.append(v)
        vals += ys
        ax.bar(xs, ys, w, label=f"F = {F}", color=WIDTHS_COLOURS[i % len(WIDTHS_COLOURS)],
               edgecolor="white", linewidth=0.3)
    ax.set_xticks(range(len(graphs)))
    ax.set_xticklabels(graphs, rotation=35, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(graphs) - 0.4)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", which="both", color="#dddddd", linewidth=0.5)
    ax.set_axisbelow(True)
    return vals


def _speedup_panel(ax, table, value, title):
    graphs = _by_edges(table)
    widths = sorted({F for g in table for F in table[g]})
    vals = _bars(ax, graphs, widths, value)
    ax.axhline(1.0, color="#b2182b", linewidth=1.2)  # the 1x line: above it gop is faster
    gm = geomean(vals)
    ax.set_title(f"{title}: geometric mean {gm:.2f}×, min {min(vals):.2f}×", fontsize=10)
    ax.set_ylabel("speed-up (peer time / gop time)", fontsize=8)
    lo, hi = min(vals + [1.0]), max(vals + [1.0])
    ax.set_ylim(lo / 1.3, hi * 1.3)
    from matplotlib.ticker import FuncFormatter, LogLocator
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(1.5, 3.0, 4.0, 7.0)))
    times = FuncFormatter(lambda v, _: f"{v:g}×")
    ax.yaxis.set_major_formatter(times)
    ax.yaxis.set_minor_formatter(times)
    ax.tick_params(axis="y", which="both", labelsize=8)
    return gm, min(vals), max(vals)


def _save(fig, path):
    fig.savefig(path, format="svg", metadata={"Date": None})
    import matplotlib.pyplot as plt
    plt.close(fig)
    print(f"wrote {os.path.relpath(path)}")


def figures(outdir):
    try:
        import matplotlib
    except ImportError:
        sys.exit("bench/report.py figures needs matplotlib: apt-get install "
                 "python3-matplotlib (Debian), or pip install matplotlib")
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "gop"  # fixed ids: the same data, the same file
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text
    import matplotlib.pyplot as plt
    os.makedirs(outdir, exist_ok=True)
    summary = []

    # gop over the best cuSPARSE SpMM, weighted and unweighted sums
    weighted = _report_rows(FIGURES["weighted"], "u_mul_e_sum")
    unweighted = _report_rows(FIGURES["unweighted"], "copy_u_sum")
    fig, axes = plt.subplots(2, 1, figsize=(9, 7.5), constrained_layout=True)
    for ax, (name, table) in zip(axes, (("weighted sum (u_mul_e_sum)", weighted),
                                        ("unweighted sum (copy_u_sum)", unweighted))):
        r = _speedup_panel(ax, table, lambda g, F, t=table: float(t[g][F]["speedup"])
                           if F in t[g] and t[g][F]["best_peer"] else None,
                           f"gop over the best cuSPARSE SpMM, {name}")
        summary.append(("cuSPARSE", name) + r)
    axes[0].legend(ncol=5, fontsize=8, loc="upper left")
    fig.suptitle(f"Aggregation, gop tuned against the fastest cuSPARSE algorithm per case "
                 f"({GPU_DATE})", fontsize=11)
    _save(fig, os.path.join(outdir, "speedup-cusparse.svg"))

    # gop over PyG (the faster of spmm and scatter per case)
    fig, axes = plt.subplots(2, 1, figsize=(9, 7.5), constrained_layout=True)
    for ax, (name, table, peers, op) in zip(axes, (
            ("weighted sum (u_mul_e_sum)", weighted, FIGURES["weighted_peers"], "u_mul_e_sum"),
            ("unweighted sum (copy_u_sum)", unweighted, FIGURES["unweighted_peers"],
             "copy_u_sum"))):
        pyg = _pyg_best(peers, op)

        def value(g, F, t=table, pyg=pyg):
            if F not in t[g] or (g, F) not in pyg:
                return None
            return pyg[(g, F)] / float(t[g][F]["tuned_ms"])
        r = _speedup_panel(ax, table, value, f"gop over PyG, {name}")
        summary.append(("PyG", name) + r)
    axes[0].legend(ncol=5, fontsize=8, loc="upper left")
    fig.suptitle(f"Aggregation, gop tuned against PyTorch Geometric (the faster of spmm and "
                 f"scatter per case; {GPU_DATE})", fontsize=11)
    _save(fig, os.path.join(outdir, "speedup-pyg.svg"))

    # the fraction of the fewest-bytes bound, gop and the best cuSPARSE
    fig, ax = plt.subplots(figsize=(9, 4.2), constrained_layout=True)
    graphs = _by_edges(weighted)
    widths = sorted({F for g in weighted for F in weighted[g]})
    _bars(ax, graphs, widths, lambda g, F: float(weighted[g][F]["tuned_frac"])
          if F in weighted[g] else None, log=False)
    n = len(widths)
    for i, F in enumerate(widths):
        xs, ys = [], []
        for j, g in enumerate(graphs):
            r = weighted[g].get(F)
            if r and r["peer_frac"]:
                xs.append(j - 0.4 + 0.8 / n * (i + 0.5))
                ys.append(float(r["peer_frac"]))
        ax.plot(xs, ys, linestyle="none", marker="_", markersize=9, markeredgewidth=2,
                color="#b2182b",
                label="best cuSPARSE" if i == 0 else None)
    ax.set_ylim(0, 1)
    ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    ax.set_ylabel("of the fewest-bytes bound", fontsize=8)
    ax.legend(ncol=6, fontsize=8, loc="upper left")
    ax.set_title(f"Weighted sum: bandwidth over the fewest bytes, as a fraction of a "
                 f"device copy ({GPU_DATE})", fontsize=10)
    _save(fig, os.path.join(outdir, "bound-fraction.svg"))

    # training loss curves, gop against PyG, per graph
    _, rows = read(os.path.join(RESULTS, FIGURES["train"]))
    curves = defaultdict(lambda: defaultdict(list))
    for r in rows:
        curves[(r["graph"], r["model"])]["step"].append(int(r["step"]))
        for k in ("loss_pyg", "loss_gop", "loss_gop_captured"):
            curves[(r["graph"], r["model"])][k].append(float(r[k]))
    for gname in sorted({g for g, _ in curves}):
        models = [m for m in MODEL_NAMES if (gname, m) in curves]
        fig, axes = plt.subplots(1, len(models), figsize=(2.4 * len(models) + 1, 3.0),
                                 constrained_layout=True, squeeze=False)
        for ax, m in zip(axes[0], models):
            c = curves[(gname, m)]
            ax.plot(c["step"], c["loss_pyg"], color="#404040", linewidth=3.0, alpha=0.45,
                    label="PyG")
            ax.plot(c["step"], c["loss_gop"], color="#2166ac", linewidth=1.2, label="gop")
            ax.plot(c["step"], c["loss_gop_captured"], color="#b2182b", linewidth=1.0,
                    linestyle=(0, (3, 2)), label="gop, captured step")
            ax.set_title(MODEL_NAMES[m], fontsize=10)
            ax.set_xlabel("Adam step", fontsize=8)
            ax.tick_params(labelsize=8)
            ax.grid(color="#dddddd", linewidth=0.5)
        axes[0][0].set_ylabel("training loss", fontsize=8)
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"Training on {gname}: gop and PyG from the same weights ({TRAIN_GPU_DATE})",
                     fontsize=10)
        _save(fig, os.path.join(outdir, f"loss-{gname}.svg"))

    for peer, name, gm, lo, hi in summary:
        print(f"{name} over {peer}: geomean {gm:.3f}x, min {lo:.3f}x, max {hi:.3f}x")


if __name__ == "__main__":
    if sys.argv[1:2] == ["figures"]:
        out = os.path.join(HERE, "..", "docs", "figures")
        if sys.argv[2:3] == ["--out"] and len(sys.argv) == 4:
            out = sys.argv[3]
        elif len(sys.argv) != 2:
            sys.exit(__doc__)
        figures(out)
    else:
        main()
