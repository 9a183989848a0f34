"""tests/gpu/pyg_common.py: what the Python package's GPU runs share
(tests/gpu/python_check.py and bench/train.py; bench/train.py puts this
folder on sys.path): the record of their checks and its report, the
relative L2 of two tensors, the reference models built from PyG's or
gop.nn's convolution classes, a section run that records its crash, and
the kernel preparation (no torch needed for that one).
"""
import os
import time
import traceback

import gop


def recorder(width):
    """A results dict ({"checks": [...], "failed": N}) and the function that
    records a check into it and prints it, the section padded to `width`."""
    results = {"checks": [], "failed": 0}

    def record(section, name, ok, detail=""):
        results["checks"].append({"section": section, "name": name, "ok": bool(ok),
                                  "detail": detail})
        if not ok:
            results["failed"] += 1
        print(f"{'ok  ' if ok else 'FAIL'} {section:{width}s} {name}: {detail}", flush=True)

    return results, record


def start(results, torch, pyg_version, **extra):
    """Describes the run in `results` (device, date, torch, PyG, the
    library, then `extra`); returns (ready, what): whether gop and torch
    both have the GPU, and gop's word on the device."""
    status, what = gop.device_status()
    results.update({"device": what, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "torch": torch.__version__, "pyg": pyg_version,
                    "library": gop.library_path, **extra})
    return status == 0 and torch.cuda.is_available(), what


def finish(results):
    """Prints the counts; the exit status: 1 when a check failed."""
    print(f"== {len(results['checks']) - results['failed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


def small_graph(datasets, name):
    """DATASETS/NAME.mtx.gz, or a small R-MAT graph where it is missing."""
    path = os.path.join(datasets, f"{name}.mtx.gz")
    return gop.Graph.open(path if os.path.exists(path) else "rmat:12:8")


def report_head(results, title):
    """The first lines of a report: its title on the device, then the counts."""
    return [f"# {title} on {results.get('device', '?')}, {results.get('date', '')}",
            "", f"{len(results['checks']) - results['failed']} checks passed, "
            f"{results['failed']} failed", ""]


def report_checks(results):
    """The report's last section: every check, one line each."""
    return ["", "## checks", ""] + [
        f"- {'ok' if c['ok'] else 'FAIL'} {c['section']}: {c['name']} {c['detail']}"
        for c in results["checks"]]


def section(record, name, fn, check="section", label=None):
    """Runs fn(); an exception is the failure of check `check` of section
    `name` (with its traceback printed), not the end of the run. Prints
    the seconds it took as "== LABEL: T s"."""
    t0 = time.time()
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - a section's crash is its failure
        traceback.print_exc()
        record(name, check, False, f"{type(e).__name__}: {e}")
    print(f"== {label or name}: {time.time() - t0:.1f} s", flush=True)


def rel_l2(a, b):
    """||a - b|| / ||b|| of two tensors in double (||a - b|| when b is 0);
    NaN in the same places is agreement, NaN in one only is inf."""
    a, b = a.double().flatten(), b.double().flatten()
    if (a.isnan() != b.isnan()).any():
        return float("inf")
    keep = ~(a.isnan() & b.isnan())
    a = a[keep].nan_to_num(posinf=0.0, neginf=0.0)
    b = b[keep].nan_to_num(posinf=0.0, neginf=0.0)
    d, r = (a - b).norm().item(), b.norm().item()
    return d / r if r > 0 else d


def build_model(torch, gnn, name, fin, classes, **kw):
    """The two-layer model `name` (gcn, gat, sage, gin; a "-suffix" is
    ignored) built from the convolution classes of `gnn`, PyG's
    torch_geometric.nn or gop.nn, so that gop's model loads PyG's
    state_dict; `kw` goes to gop's GCNConv and GINConv only (fused=False:
    the stdlib aggregation and a torch epilogue)."""
    nn, Fn = torch.nn, torch.nn.functional
    gcn_kw = kw if gnn is gop.nn else {}

    class GCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = gnn.GCNConv(fin, 16, **gcn_kw)
            self.conv2 = gnn.GCNConv(16, classes, **gcn_kw)

        def forward(self, x, g):
            return self.conv2(Fn.relu(self.conv1(x, g)), g)

    class GAT(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = gnn.GATConv(fin, 8, heads=8)
            self.conv2 = gnn.GATConv(64, classes, heads=1)

        def forward(self, x, g):
            return self.conv2(Fn.elu(self.conv1(x, g)), g)

    class SAGE(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = gnn.SAGEConv(fin, 64), gnn.SAGEConv(64, classes)

        def forward(self, x, g):
            return self.conv2(Fn.relu(self.conv1(x, g)), g)

    class GIN(nn.Module):
        def __init__(self):
            super().__init__()
            mlp = lambda a, b: nn.Sequential(nn.Linear(a, 64), nn.ReLU(), nn.Linear(64, b))  # noqa
            self.conv1 = gnn.GINConv(mlp(fin, 64), **gcn_kw)
            self.conv2 = gnn.GINConv(mlp(64, classes), **gcn_kw)

        def forward(self, x, g):
            return self.conv2(Fn.relu(self.conv1(x, g)), g)

    return {"gcn": GCN, "gat": GAT, "sage": SAGE, "gin": GIN}[name.split("-")[0]]()


def prepare(ops, grads=(), what="operators", extra=()):
    """Compiles each operator of `ops`, and the gradient operators of each
    (operator, inputs) of `grads`, into the kernel cache folder
    (GOP_CACHE_DIR) on a small graph: the carried packs the GPU machine,
    which has no LLVM, loads; then each (name, f) of `extra`, f(graph)
    preparing something else (a retyped instance). Says what it could not
    prepare; returns 0."""
    g = gop.Graph.open("grid:4x4")
    n, bad = 0, []
    for name, f in [(op.name, op.prepare) for op in ops] + list(extra):
        try:
            f(g)
            n += 1
        except gop.GopError as e:
            bad.append(f"{name}: {str(e).splitlines()[-1]}")
    for op, wrt in grads:
        try:
            op.grad(wrt).prepare(g)
            n += 1
        except gop.GopError as e:
            bad.append(f"{op.name} grad {wrt}: {' '.join(str(e).split())[:300]}")
    print(f"prepared {n} {what} into {gop.cache_dir()}: {gop.cache_stats()}")
    for b in bad:
        print("  not prepared:", b)
    return 0
