#!/usr/bin/env python3
"""bench/gat_attention.py: GAT's attention (examples/models/layers.gop
gat_attention: the scores leaky_relu(As[src] + Ad[dst]), their softmax
over each destination's in-edges, the weighted sum of the sources' rows
Z[src, h, :]) on the GPU, gop against PyTorch Geometric as its GATConv
computes it after the projection:

    alpha = leaky_relu(a_s[src] + a_d[dst], 0.2)
    alpha = torch_geometric.utils.softmax(alpha, dst, num_nodes=V)
    out = scatter(z[src] * alpha[..., None], dst, dim_size=V, reduce="sum")

Per graph (gzip'ed Matrix Market, entry i j = arc i -> j) with H heads of
C channels: PyG's time by CUDA-graph replay (bench/peers/pyg_bench.py's
time_graph_ms, its result checked against a float64 reference first);
gop's by `gopc run ... --gpu --check` (each schedule's output compared
with the reference interpreter, then timed by CUDA events: a launch or
two more than a replay would count, so the ratios lean to PyG). Writes
OUT/gat_attention.csv and OUT/gat_attention.md.

Usage: bench/gat_attention.py GOPC DATASETS OUT [--graphs G ...] [--H 8] [--C 8]
                              [--schedules "default;gat_groups(32, 8, 16)"]
"""
import argparse
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
import pyg_bench  # noqa: E402 - the peers' graph reader and timing


def pyg_attention(torch, nv, src, dst, H, C, reps):
    """PyG's time (ms) and its relative L2 error against float64."""
    from torch.nn import functional as F
    from torch_geometric.utils import scatter, softmax

    gen = torch.Generator(device="cuda").manual_seed(0)
    z = torch.rand(nv, H, C, device="cuda", generator=gen) * 2 - 1
    a_s = torch.rand(nv, H, device="cuda", generator=gen) * 2 - 1
    a_d = torch.rand(nv, H, device="cuda", generator=gen) * 2 - 1

    def run(s):
        alpha = F.leaky_relu(s["a_s"][src] + s["a_d"][dst], 0.2)
        alpha = softmax(alpha, dst, num_nodes=nv)
        return scatter(s["z"][src] * alpha.unsqueeze(-1), dst, 0, dim_size=nv, reduce="sum")

    s = {"z": z, "a_s": a_s, "a_d": a_d}
    got = run(s)
    d = {k: v.double() for k, v in s.items()}
    sc = F.leaky_relu(d["a_s"][src] + d["a_d"][dst], 0.2)
    m = torch.full((nv, H), -math.inf, dtype=torch.float64, device="cuda")
    m.scatter_reduce_(0, dst.unsqueeze(-1).expand(-1, H), sc, "amax")
    e = torch.exp(sc - m[dst])
    zsum = torch.zeros(nv, H, dtype=torch.float64, device="cuda").index_add_(0, dst, e)
    want = torch.zeros(nv, H, C, dtype=torch.float64, device="cuda").index_add_(
        0, dst, d["z"][src] * (e / zsum[dst]).unsqueeze(-1))
    err = (torch.linalg.vector_norm(got.double() - want) /
           max(torch.linalg.vector_norm(want).item(), 1e-30)).item()
    ms, _ = pyg_bench.time_graph_ms(run, [s], 5, reps, 0)
    return ms, err


def gop_attention(gopc, path, H, C, sched, reps):
    """(ms, check line) of gopc run under `sched` ("default": none)."""
    cmd = [gopc, "run", "examples/models/layers.gop", "--op", "gat_attention", "--graph", path,
           "--dim", f"H={H}", "--dim", f"C={C}", "--gpu", "--check", "--reps", str(reps)]
    if sched != "default":
        cmd += ["--schedule", sched]
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout + p.stderr
    t = re.search(r"time ([0-9.]+) ms", out)
    chk = re.search(r"check: (.*)", out)
    ok = p.returncode == 0 and chk is not None and "agree" in chk.group(1)
    return (float(t.group(1)) if t and ok else float("nan")), (chk.group(1) if chk else
                                                              out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gopc")
    ap.add_argument("datasets")
    ap.add_argument("out")
    ap.add_argument("--graphs", nargs="*")
    ap.add_argument("--H", type=int, default=8)
    ap.add_argument("--C", type=int, default=8)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--schedules", default="default;gat_groups(32, 8, 16)")
    a = ap.parse_args()
    import torch

    scheds = [s.strip() for s in a.schedules.split(";") if s.strip()]
    graphs = a.graphs or sorted(f[:-7] for f in os.listdir(a.datasets) if f.endswith(".mtx.gz"))
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for g in graphs:
        path = os.path.join(a.datasets, g + ".mtx.gz")
        nv, src, dst = pyg_bench.load_mtx_gz(path)
        _, src, dst = pyg_bench.csr_by_dst(nv, src, dst)
        ts, td = torch.from_numpy(src).cuda(), torch.from_numpy(dst).cuda()
        pyg_ms, err = pyg_attention(torch, nv, ts, td, a.H, a.C, a.reps)
        row = {"graph": g, "V": nv, "E": len(src), "pyg_ms": pyg_ms, "pyg_rel_l2": err}
        for s in scheds:
            row[s], row[s + " check"] = gop_attention(a.gopc, path, a.H, a.C, s, a.reps)
        best = min((row[s], s) for s in scheds if not math.isnan(row[s]))
        row["gop_best"], row["gop_best_ms"] = best[1], best[0]
        row["speedup"] = pyg_ms / best[0]
        rows.append(row)
        print(f"{g}: PyG {pyg_ms:.4f} ms (rel L2 {err:.1e}); " +
              "; ".join(f"{s} {row[s]:.4f}" for s in scheds) +
              f"; best over PyG {row['speedup']:.2f}x", flush=True)
    keys = list(rows[0].keys())
    with open(os.path.join(a.out, "gat_attention.csv"), "w") as f:
        f.write(",".join(f'"{k}"' for k in keys) + "\n")
        for r in rows:
            f.write(",".join(f'"{r[k]}"' if isinstance(r[k], str) else f"{r[k]}"
                             for k in keys) + "\n")
    gm = math.exp(sum(math.log(r["speedup"]) for r in rows) / len(rows))
    with open(os.path.join(a.out, "gat_attention.md"), "w") as f:
        f.write(f"GAT attention (H = {a.H}, C = {a.C}) on {torch.cuda.get_device_name()}, ms\n\n")
        f.write("| graph | V | E | PyG | " + " | ".join(scheds) + " | gop best over PyG |\n")
        f.write("|---|---:|---:|---:|" + "---:|" * len(scheds) + "---:|\n")
        for r in rows:
            f.write(f"| {r['graph']} | {r['V']} | {r['E']} | {r['pyg_ms']:.4f} | " +
                    " | ".join(f"{r[s]:.4f}" for s in scheds) + f" | {r['speedup']:.2f}x |\n")
        f.write(f"\ngeometric mean of gop's best over PyG: {gm:.2f}x "
                f"(min {min(r['speedup'] for r in rows):.2f}x, "
                f"max {max(r['speedup'] for r in rows):.2f}x) over {len(rows)} graphs\n")
    print(f"geometric mean {gm:.2f}x")


if __name__ == "__main__":
    main()
