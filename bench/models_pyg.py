#!/usr/bin/env python3
"""bench/models_pyg.py: gop's model layers against PyTorch Geometric.

For each model and graph: writes one set of seeded random weights and one
input as .npy files, runs `gopc model NAME --weights DIR --x X.npy --out
Y.npy` (on the GPU), builds the same model in PyG (GCNConv, GINConv,
GATConv, SAGEConv, with the options that make the math gop's), loads the
same weights, runs it, checks that the outputs agree (relative L2 below
1e-4) and prints both times as a table. Exits 1 on any disagreement or
failure, after printing everything it measured.

    python3 bench/models_pyg.py --gopc .carry/gpu/gopc \
        --datasets .carry/gpu/datasets --out /tmp/models [--graphs cora,...]

Times: both are medians of whole forwards timed with CUDA events after
warm-up, every tensor resident on the GPU: gop's is what `gopc model`
prints (the model's device-resident forward, models/models.c), PyG's is
measured here. `--dry-run` needs no
torch: it writes the inputs and runs gop only (for checking the plumbing
on a machine without a GPU).
"""
import argparse
import gzip
import os
import re
import statistics
import subprocess
import sys

import numpy as np

# Graph -> (usual input feature width, classes) in GNN papers.
GRAPHS = {
    "cora": (1433, 7),
    "citeseer": (3703, 6),
    "pubmed": (500, 3),
    "ogbn-arxiv": (128, 40),
    "molhiv": (9, 2),
}
MODELS = ["gcn", "gin", "gat", "gat-sep", "sage-sum", "sage-mean", "sage-max"]
HIDDEN = {"gcn": 16, "gin": 64, "gat": 8, "sage": 64}
GIN_LAYERS = 5
HEADS = 8
TOLERANCE = 1e-4


def read_mtx(path):
    """Arcs (src, dst), 0-based, in gop's edge order: the file's, with a
    symmetric entry (i, j) followed by (j, i) (a diagonal one once)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        header = f.readline()
        if not header.startswith("%%MatrixMarket"):
            raise SystemExit(f"{path}: not a Matrix Market file")
        symmetric = "symmetric" in header.lower()
        line = f.readline()
        while line.startswith("%"):
            line = f.readline()
        nrows, ncols, nnz = (int(t) for t in line.split()[:3])
        data = np.array(f.read().split(), dtype=np.int64)
    width = len(data) // nnz if nnz else 2
    if nnz and (width < 2 or len(data) != width * nnz):
        raise SystemExit(f"{path}: expected {nnz} entries, found {len(data)} numbers")
    data = data.reshape(nnz, width)[:, :2] - 1
    src, dst = data[:, 0], data[:, 1]
    if symmetric:
        off = src != dst
        pairs = []
        for i in range(nnz):  # rare for our datasets: they are all general
            pairs.append((src[i], dst[i]))
            if off[i]:
                pairs.append((dst[i], src[i]))
        arr = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        src, dst = arr[:, 0], arr[:, 1]
    return max(nrows, ncols), src, dst


def glorot(rng, fan_in, fan_out):
    a = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-a, a, size=(fan_in, fan_out)).astype(np.float32)


def make_weights(model, fin, classes, seed):
    """gop's parameters: name -> array, weights [in, out] (y = x W)."""
    rng = np.random.default_rng(seed)
    w = {}

    def linear(prefix, i, o, bias=True):
        w[prefix + ".weight"] = glorot(rng, i, o)
        if bias:
            w[prefix + ".bias"] = rng.uniform(-0.1, 0.1, o).astype(np.float32)

    kind = model.split("-")[0]
    hd = HIDDEN[kind]
    if kind == "gcn":
        linear("conv1", fin, hd)
        linear("conv2", hd, classes)
    elif kind == "gin":
        for l in range(1, GIN_LAYERS + 1):
            linear(f"conv{l}.lin1", fin if l == 1 else hd, hd)
            linear(f"conv{l}.lin2", hd, hd)
            w[f"conv{l}.eps"] = rng.uniform(-0.5, 0.5, 1).astype(np.float32)
        linear("lin", hd, classes)
    elif kind == "gat":
        for l, (i, h, c) in enumerate([(fin, HEADS, hd), (HEADS * hd, 1, classes)], 1):
            linear(f"conv{l}", i, h * c, bias=False)
            w[f"conv{l}.att_src"] = rng.uniform(-0.5, 0.5, (h, c)).astype(np.float32)
            w[f"conv{l}.att_dst"] = rng.uniform(-0.5, 0.5, (h, c)).astype(np.float32)
            w[f"conv{l}.bias"] = rng.uniform(-0.1, 0.1, h * c).astype(np.float32)
    else:
        for l, (i, o) in enumerate([(fin, hd), (hd, classes)], 1):
            linear(f"conv{l}.lin_l", i, o)
            linear(f"conv{l}.lin_r", i, o, bias=False)
    return w


def find_cublas(torch):
    """gopc dlopens libcublas.so.13/.12 (or GOP_CUBLAS_LIBRARY): when the
    loader finds neither, point it at the toolkit's or the one PyTorch
    bundles."""
    import ctypes
    import glob

    if os.environ.get("GOP_CUBLAS_LIBRARY"):
        return
    for name in ("libcublas.so.13", "libcublas.so.12", "libcublas.so"):
        try:
            ctypes.CDLL(name)
            return
        except OSError:
            pass
    tdir = os.path.dirname(torch.__file__)
    for pattern in ("/usr/local/cuda*/lib64/libcublas.so.1[0-9]*",
                    os.path.join(tdir, "..", "nvidia", "cublas", "lib", "libcublas.so.*"),
                    os.path.join(tdir, "lib", "libcublas.so.*")):
        found = sorted(glob.glob(pattern))
        if found:
            os.environ["GOP_CUBLAS_LIBRARY"] = os.path.realpath(found[-1])
            print(f"GOP_CUBLAS_LIBRARY={os.environ['GOP_CUBLAS_LIBRARY']}")
            return
    print("warning: no libcublas found; gopc will say why it cannot run", file=sys.stderr)


def run_gop(args, model, graph_path, wdir, xpath, ypath, fin, classes):
    name = "gat" if model == "gat-sep" else model
    cmd = [args.gopc, "model", name, "--graph", graph_path, "--weights", wdir,
           "--x", xpath, "--out", ypath, "--classes", str(classes),
           "--reps", str(args.reps)]
    if model == "gat-sep":
        cmd.append("--gat-separate")
    if args.check_gop:
        cmd.append("--check")
    if not args.dry_run:
        cmd.append("--gpu")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"gopc failed (exit {p.returncode}): {' '.join(cmd)}\n"
                           f"{p.stdout}{p.stderr}")
    m = re.search(r"time ([0-9.]+) ms", p.stdout)
    if not m and not args.dry_run:
        raise RuntimeError(f"no time in gopc's output:\n{p.stdout}")
    return (float(m.group(1)) if m else float("nan")), p.stdout


def build_pyg(model, w, fin, classes, torch, device):
    """The PyG model with gop's weights; PyG's Linear holds [out, in]."""
    from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv

    def T(a):  # a gop weight [in, out] as a PyG Linear weight [out, in]
        return torch.from_numpy(np.ascontiguousarray(a.T))

    def V(a):
        return torch.from_numpy(np.ascontiguousarray(a))

    kind = model.split("-")[0]
    hd = HIDDEN[kind]
    nn = torch.nn
    if kind == "gcn":
        # cached: the normalisation once, as gop computes it when the model
        # is built; the rest of the defaults are gop's (self-loops, D^-1/2).
        c1 = GCNConv(fin, hd, add_self_loops=True, normalize=True, bias=True, cached=True)
        c2 = GCNConv(hd, classes, add_self_loops=True, normalize=True, bias=True, cached=True)
        for l, c in ((1, c1), (2, c2)):
            c.lin.weight.data.copy_(T(w[f"conv{l}.weight"]))
            c.bias.data.copy_(V(w[f"conv{l}.bias"]))

        class M(nn.Module):
            def __init__(s):
                super().__init__()
                s.c1, s.c2 = c1, c2

            def forward(s, x, ei):
                return s.c2(s.c1(x, ei).relu(), ei)

    elif kind == "gin":
        convs = nn.ModuleList()
        for l in range(1, GIN_LAYERS + 1):
            din = fin if l == 1 else hd
            mlp = nn.Sequential(nn.Linear(din, hd), nn.ReLU(), nn.Linear(hd, hd))
            # GINConv's constructor resets its MLP's parameters: build the
            # conv first, then copy the weights in.
            conv = GINConv(mlp, eps=float(w[f"conv{l}.eps"][0]), train_eps=False)
            mlp[0].weight.data.copy_(T(w[f"conv{l}.lin1.weight"]))
            mlp[0].bias.data.copy_(V(w[f"conv{l}.lin1.bias"]))
            mlp[2].weight.data.copy_(T(w[f"conv{l}.lin2.weight"]))
            mlp[2].bias.data.copy_(V(w[f"conv{l}.lin2.bias"]))
            conv.eps.data.fill_(float(w[f"conv{l}.eps"][0]))
            convs.append(conv)
        lin = nn.Linear(hd, classes)
        lin.weight.data.copy_(T(w["lin.weight"]))
        lin.bias.data.copy_(V(w["lin.bias"]))

        class M(nn.Module):
            def __init__(s):
                super().__init__()
                s.convs, s.lin = convs, lin

            def forward(s, x, ei):
                for c in s.convs:
                    x = c(x, ei).relu()
                return s.lin(x)

    elif kind == "gat":
        c1 = GATConv(fin, hd, heads=HEADS, concat=True, negative_slope=0.2, dropout=0.0,
                     add_self_loops=True, bias=True)
        c2 = GATConv(HEADS * hd, classes, heads=1, concat=False, negative_slope=0.2,
                     dropout=0.0, add_self_loops=True, bias=True)
        for l, c, h, cc in ((1, c1, HEADS, hd), (2, c2, 1, classes)):
            lin = getattr(c, "lin", None) or c.lin_src  # PyG >= 2.5: lin; older: lin_src
            lin.weight.data.copy_(T(w[f"conv{l}.weight"]))
            c.att_src.data.copy_(V(w[f"conv{l}.att_src"]).view(1, h, cc))
            c.att_dst.data.copy_(V(w[f"conv{l}.att_dst"]).view(1, h, cc))
            c.bias.data.copy_(V(w[f"conv{l}.bias"]))

        class M(nn.Module):
            def __init__(s):
                super().__init__()
                s.c1, s.c2 = c1, c2

            def forward(s, x, ei):
                return s.c2(torch.nn.functional.elu(s.c1(x, ei)), ei)

    else:
        aggr = model.split("-")[1]
        c1 = SAGEConv(fin, hd, aggr=aggr, normalize=False, root_weight=True, bias=True)
        c2 = SAGEConv(hd, classes, aggr=aggr, normalize=False, root_weight=True, bias=True)
        for l, c in ((1, c1), (2, c2)):
            c.lin_l.weight.data.copy_(T(w[f"conv{l}.lin_l.weight"]))
            c.lin_l.bias.data.copy_(V(w[f"conv{l}.lin_l.bias"]))
            c.lin_r.weight.data.copy_(T(w[f"conv{l}.lin_r.weight"]))

        class M(nn.Module):
            def __init__(s):
                super().__init__()
                s.c1, s.c2 = c1, c2

            def forward(s, x, ei):
                return s.c2(s.c1(x, ei).relu(), ei)

    return M().to(device).eval()


def time_pyg(net, x, ei, torch, warmup, reps):
    with torch.no_grad():
        y = net(x, ei)
        for _ in range(warmup):
            net(x, ei)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            net(x, ei)
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
    return y.float().cpu().numpy(), statistics.median(times)


def rel_l2(a, ref):
    a = a.astype(np.float64)
    ref = ref.astype(np.float64)
    if a.shape != ref.shape:
        return float("inf")
    if np.isnan(a).any() or np.isnan(ref).any():
        return float("nan")
    den = np.linalg.norm(ref)
    return float(np.linalg.norm(a - ref) / (den if den > 0 else 1.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gopc", required=True)
    ap.add_argument("--datasets", required=True, help="directory of NAME.mtx.gz")
    ap.add_argument("--out", required=True, help="work directory (weights, inputs, outputs)")
    ap.add_argument("--graphs", default="cora,pubmed,ogbn-arxiv,molhiv")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check-gop", action="store_true",
                    help="also pass --check to gopc (GPU against its interpreter)")
    ap.add_argument("--dry-run", action="store_true",
                    help="no torch: write the inputs and run gop only")
    args = ap.parse_args()

    torch = device = None
    if not args.dry_run:
        import torch  # noqa: F811 (the GPU machine has it; CI does not)

        if not torch.cuda.is_available():
            raise SystemExit("models_pyg.py: torch sees no GPU (use --dry-run to test plumbing)")
        torch.backends.cuda.matmul.allow_tf32 = False  # gop's SGEMM is plain FP32
        torch.backends.cudnn.allow_tf32 = False
        device = torch.device("cuda")
        import torch_geometric

        find_cublas(torch)

        print(f"torch {torch.__version__}, torch_geometric {torch_geometric.__version__}, "
              f"{torch.cuda.get_device_name()}")

    models = [m for m in args.models.split(",") if m]
    for m in models:
        if m not in MODELS:
            raise SystemExit(f"unknown model {m}: {', '.join(MODELS)}")
    rows, failures = [], []
    for gname in [g for g in args.graphs.split(",") if g]:
        if gname not in GRAPHS:
            raise SystemExit(f"unknown graph {gname}: {', '.join(GRAPHS)}")
        gpath = os.path.join(args.datasets, gname + ".mtx.gz")
        nv, src, dst = read_mtx(gpath)
        fin, classes = GRAPHS[gname]
        gdir = os.path.join(args.out, gname)
        os.makedirs(gdir, exist_ok=True)
        rng = np.random.default_rng(args.seed)
        x = rng.uniform(-1, 1, (nv, fin)).astype(np.float32)
        xpath = os.path.join(gdir, "x.npy")
        np.save(xpath, x)
        if not args.dry_run:
            xt = torch.from_numpy(x).to(device)
            ei = torch.from_numpy(np.stack([src, dst])).to(device)
        print(f"== {gname}: |V| {nv}, |E| {len(src)}, in {fin}, classes {classes}", flush=True)
        for model in models:
            wdir = os.path.join(gdir, model + ".weights")
            os.makedirs(wdir, exist_ok=True)
            w = make_weights(model, fin, classes, args.seed + 17)
            for k, a in w.items():
                np.save(os.path.join(wdir, k + ".npy"), a)
            ypath = os.path.join(gdir, model + ".gop.npy")
            try:
                gop_ms, log = run_gop(args, model, gpath, wdir, xpath, ypath, fin, classes)
            except RuntimeError as e:
                print(f"FAIL {model} on {gname}: {e}", flush=True)
                failures.append(f"{model}/{gname}: gopc failed")
                rows.append((gname, model, float("nan"), float("nan"), float("nan"), "FAIL"))
                continue
            y_gop = np.load(ypath)
            if args.dry_run:
                print(log, end="", flush=True)
                rows.append((gname, model, gop_ms, float("nan"), float("nan"), "gop only"))
                continue
            net = build_pyg(model, w, fin, classes, torch, device)
            y_pyg, pyg_ms = time_pyg(net, xt, ei, torch, args.warmup, args.reps)
            np.save(os.path.join(gdir, model + ".pyg.npy"), y_pyg)
            err = rel_l2(y_gop, y_pyg)
            ok = err < TOLERANCE  # NaN and inf compare false
            if not ok:
                failures.append(f"{model}/{gname}: relative L2 {err:.3g}")
            rows.append((gname, model, gop_ms, pyg_ms, err, "ok" if ok else "DISAGREE"))
            print(f"{model:10s} gop {gop_ms:9.4f} ms  PyG {pyg_ms:9.4f} ms  "
                  f"relative L2 {err:.3g}  {'ok' if ok else 'DISAGREE'}", flush=True)
            del net

    print()
    print("| graph | model | gop (ms) | PyG (ms) | PyG / gop | relative L2 | status |")
    print("|---|---|---:|---:|---:|---:|---|")
    for g, m, a, b, e, s in rows:
        ratio = b / a if a == a and b == b and a > 0 else float("nan")
        print(f"| {g} | {m} | {a:.4f} | {b:.4f} | {ratio:.2f}x | {e:.2g} | {s} |")
    if failures:
        print(f"\nFAILED: {len(failures)} case(s):", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        sys.exit(1)
    if args.dry_run:
        print(f"\nall {len(rows)} cases ran in gop (dry run: nothing compared)")
    else:
        print(f"\nall {len(rows)} cases agree with PyG (relative L2 < {TOLERANCE:g})")


if __name__ == "__main__":
    main()
