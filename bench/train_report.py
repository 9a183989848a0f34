"""The output: train.csv and the other CSVs, the loss curves as SVG (written
by hand: no plotting library on the GPU machine), and train.md."""
import csv
import json
import math
import os

import train_common as common
from train_common import MODELS, SCHEDULE, report_checks, report_head, results


def svg_curves(path, gname, curves):
    """Loss against step, PyG solid and gop dashed, one colour per model."""
    W, H, L, R, T, B = 640, 400, 60, 130, 30, 40
    allv = [v for a, b in curves.values() for v in a + b if math.isfinite(v)]
    if not allv:
        return
    lo, hi = min(allv), max(allv)
    hi = hi if hi > lo else lo + 1

    def px(i, v):
        return (L + (W - L - R) * i / (common.STEPS - 1), T + (H - T - B) * (hi - v) / (hi - lo))

    colours = {"gcn": "#1f77b4", "gat": "#d62728", "sage": "#2ca02c", "gin": "#9467bd"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="18" text-anchor="middle">training loss on {gname}: '
           f'PyG (solid) and gop (dashed)</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        _, y = px(0, v)
        out.append(f'<text x="{L - 5}" y="{y + 4:.1f}" text-anchor="end">{v:.3f}</text>')
    for i in range(0, common.STEPS, 10):
        x, _ = px(i, lo)
        out.append(f'<text x="{x:.1f}" y="{H - B + 15}" text-anchor="middle">{i}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 5}" text-anchor="middle">step</text>')
    for n, (m, (a, b)) in enumerate(curves.items()):
        c = colours.get(m, "black")
        for vals, dash in ((a, ""), (b, ' stroke-dasharray="6,4"')):
            pts = " ".join(f"{px(i, v)[0]:.1f},{px(i, v)[1]:.1f}" for i, v in enumerate(vals)
                           if math.isfinite(v))
            out.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5"{dash} '
                       f'points="{pts}"/>')
        y = T + 20 * n
        out.append(f'<line x1="{W - R + 10}" y1="{y}" x2="{W - R + 40}" y2="{y}" '
                   f'stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{W - R + 45}" y="{y + 4}">{m}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_csv(path, rows):
    if not rows:
        return
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _cell(v, fmt, note=""):
    """A table cell: the value, or (NaN: not run) the note why, '|' escaped."""
    if isinstance(v, float) and math.isnan(v):
        return (note or "-").replace("|", "\\|")[:160]
    return fmt.format(v)


def _geomean(vals):
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def _captured_line(rows, key):
    """The summary of gop captured in `rows`: its geometric mean speedup over
    PyG eager, and over PyG captured where PyG captured (also into results,
    as geomean_speedup_captured{key} and ..._vs_pyg_captured{key})."""
    cap = [s["speedup_captured"] for s in rows if not math.isnan(s["speedup_captured"])]
    if not cap:
        notes = sorted({s["gop_captured_note"] for s in rows if s["gop_captured_note"]})
        return f"gop captured: not measured ({'; '.join(notes) or 'no run'})"
    g = results[f"geomean_speedup_captured{key}"] = _geomean(cap)
    out = f"gop captured: {g:.2f}x PyG eager ({len(cap)} of {len(rows)})"
    both = [s["speedup_captured_vs_pyg_captured"] for s in rows
            if not math.isnan(s["speedup_captured_vs_pyg_captured"])]
    if both:
        gb = results[f"geomean_speedup_captured_vs_pyg_captured{key}"] = _geomean(both)
        out += f", {gb:.2f}x PyG captured (the {len(both)} where PyG captured)"
    else:
        out += ", PyG captured nowhere"
    return out


def write_report(out, summary, orows=()):
    lines = report_head(results, "gop training vs PyG")
    if summary:
        lines += [f"## full-batch training, {common.STEPS} Adam steps", "",
                  f"gop trains with schedule={SCHEDULE!r}; 'default' is the same gop model "
                  "under the default mapping, timed in the same run. 'captured': the whole "
                  "step (forward, loss, backward, Adam capturable=True) captured once as a "
                  "CUDA graph (gop.train.capture_step) and replayed; its speedup is over PyG "
                  "eager; PyG captured the same way where it captures (else why not).", "",
                  "| graph | model | epoch ms PyG | epoch ms gop | speedup | epoch ms gop "
                  "default (speedup) | epoch ms gop captured | captured speedup over PyG | "
                  "epoch ms PyG captured | forward ms PyG | "
                  "forward ms gop | peak MB PyG | peak MB gop (+device) | peak MB gop captured | "
                  "acc PyG | acc gop | acc gop captured | "
                  "max rel loss diff (PyG rerun) | max rel loss diff captured |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for s in summary:
            lines.append(
                f"| {s['graph']} | {s['model']} | {s['epoch_ms_pyg']:.2f} | "
                f"{s['epoch_ms_gop']:.2f} | {s['speedup']:.2f}x | "
                f"{s['epoch_ms_gop_default']:.2f} ({s['speedup_default']:.2f}x) | "
                f"{_cell(s['epoch_ms_gop_captured'], '{:.2f}', s['gop_captured_note'])} | "
                f"{_cell(s['speedup_captured'], '{:.2f}x')} | "
                f"{_cell(s['epoch_ms_pyg_captured'], '{:.2f}', s['pyg_captured_note'])} | "
                f"{s['forward_ms_pyg']:.2f} | "
                f"{s['forward_ms_gop']:.2f} | {s['peak_mb_pyg']:.0f} | "
                f"{s['peak_mb_gop']:.0f} (+{s['device_growth_mb_gop']:.0f}) | "
                f"{_cell(s['peak_mb_gop_captured'], '{:.0f}')} | "
                f"{s['acc_pyg']:.4f} | {s['acc_gop']:.4f} | "
                f"{_cell(s['acc_gop_captured'], '{:.4f}')} | {s['max_rel_loss_diff']:.1e} "
                f"({s['max_rel_loss_diff_pyg_rerun']:.1e}) | "
                f"{_cell(s['max_rel_loss_diff_captured'], '{:.1e}')} |")
        for m in MODELS:
            sp = [s["speedup"] for s in summary if s["model"] == m]
            sd = [s["speedup_default"] for s in summary if s["model"] == m]
            if sp:
                gm, gd = _geomean(sp), _geomean(sd)
                results[f"geomean_speedup_{m}"] = gm
                results[f"geomean_speedup_default_{m}"] = gd
                lines.append(f"\n{m}: geometric mean epoch speedup over PyG {gm:.2f}x "
                             f"(default mapping: {gd:.2f}x); " + _captured_line(
                                 [s for s in summary if s["model"] == m], f"_{m}"))
        lines.append("\nall models: " + _captured_line(summary, ""))
    if orows:
        lines += ["", "## each gop call of the training, default mapping -> chosen schedule",
                  "", "| graph | op | extents | wrt | joint | forward ms | backward ms | "
                  "chosen schedules |", "| --- | --- | --- | --- | --- | ---: | ---: | --- |"]
        for r in orows:
            b = (f"{r['bwd_ms_default']:.3f} -> {r['bwd_ms_chosen']:.3f}"
                 if r["bwd_ms_default"] != "" else "")
            lines.append(f"| {r['graph']} | {r['op']} | {r['extents']} | {r['wrt']} | "
                         f"{r['joint']} | {r['fwd_ms_default']:.3f} -> {r['fwd_ms_chosen']:.3f}"
                         f" | {b} | {r['schedule_chosen']} |")
    lines += report_checks(results)
    with open(os.path.join(out, "train.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    results["summary"] = summary
    with open(os.path.join(out, "train.json"), "w") as f:
        json.dump(results, f, indent=1)
