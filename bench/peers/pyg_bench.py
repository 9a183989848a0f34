#!/usr/bin/env python3
"""bench/peers/pyg_bench.py: PyTorch Geometric and torch as peers of gop.

Times, on the GPU, the graph operators of gop's standard library written the
way a PyTorch Geometric user writes them, on the graphs of a datasets folder
(gzip'ed Matrix Market, entry i j = arc i -> j) for each feature width F:

  peer              op            call
  pyg_scatter       copy_u_sum    scatter(X[src], dst, reduce='sum')
                    u_mul_e_sum   scatter(X[src] * w[:, None], dst, reduce='sum')
                    copy_u_mean   scatter(X[src], dst, reduce='mean')
                    copy_u_max    scatter(X[src], dst, reduce='max')
  pyg_spmm          copy_u_sum    torch_geometric.utils.spmm(A1, X)  (A: torch CSR)
                    u_mul_e_sum   spmm(Aw, X)
                    copy_u_mean   spmm(A1, X, reduce='mean')
  torch_sparse_csr  copy_u_sum    torch.sparse.mm(A1, X)
                    u_mul_e_sum   torch.sparse.mm(Aw, X)
  torch_gather      u_dot_v       (X[src] * Y[dst]).sum(-1)
                    u_add_v       X[src] + Y[dst]
  pyg_softmax       edge_softmax  softmax(S, dst, num_nodes=V)        (F = 1)
  pyg_softmax_ptr   edge_softmax  softmax(S, ptr=rowptr)              (F = 1)

A is the CSR by destination (row v = v's in-edges); the edges are sorted by
(destination, source), and edge tensors (w, S, outputs) follow that order.
Each result is checked once against a float64 computation on the GPU
(relative L2 < 1e-4) before it is timed; timing uses CUDA events, a warm-up,
and the median of repeats, rotating several input copies when one copy fits
in L2. By default (--timing graph) the timed rounds are captured into one
torch.cuda.CUDAGraph and its replays are timed, per call, as gop_bench and
cusparse_bench time theirs; a call that cannot be captured is noted and
timed with events (--timing events: every call so). Output: CSV rows
`peer,op,graph,V,E,F,time_ms,gbps,frac_of_bound,ok,timing,graph_calls` on
stdout, `#` lines for facts and skips; bench/README.md has the formulas.

`--summary CSV` prints the table of the best peer per graph and width for
weighted sum aggregation (and needs no torch).
"""
import argparse
import math
import os
import sys
import time

OPS_F = ("copy_u_sum", "u_mul_e_sum", "copy_u_mean", "copy_u_max", "u_dot_v", "u_add_v")
HEADER = "peer,op,graph,V,E,F,time_ms,gbps,frac_of_bound,ok,timing,graph_calls"
# The most calls one captured graph holds (rounds x sets), and the replay
# length the rounds are chosen for: gop_bench's (RT_GRAPH_MAX_RUNS,
# RT_GRAPH_TARGET_MS) and cusparse_bench's.
GRAPH_MAX_RUNS = 1024
GRAPH_TARGET_MS = 1.0
DEFAULT_GRAPHS = ("cora", "citeseer", "pubmed", "wiki-Vote", "ca-HepPh", "musae-facebook",
                  "deezer-HU", "blogcatalog", "proteins", "delaunay_n16", "soc-Slashdot0902",
                  "ogbn-arxiv", "cnr-2000", "molhiv")


def fewest_bytes(op, nv, ne, f):
    """Bytes an operator must move at the least (bench/README.md): each input
    read once, each output written once, 4-byte values and indices, the graph
    as CSR by destination (row pointers (V+1)*4, column indices E*4)."""
    csr = (nv + 1) * 4 + ne * 4
    if op in ("copy_u_sum", "copy_u_mean", "copy_u_max"):
        return 2 * nv * f * 4 + csr
    if op == "u_mul_e_sum":
        return 2 * nv * f * 4 + csr + ne * 4
    if op == "u_dot_v":
        return 2 * nv * f * 4 + csr + ne * 4
    if op == "u_add_v":
        return 2 * nv * f * 4 + csr + ne * f * 4
    if op == "edge_softmax":  # the rows' boundaries suffice: no column indices
        return (nv + 1) * 4 + ne * 4 + ne * 4
    raise ValueError(op)


# ---- reading graphs ---------------------------------------------------------

def load_mtx_gz(path):
    """Returns (|V|, src, dst) as int64 numpy arrays, 0-based, from a Matrix
    Market coordinate file (plain or gzip'ed; pattern, real or integer;
    general or symmetric, the latter expanded). Entry (i, j) is arc i -> j."""
    import gzip
    import warnings

    import numpy as np

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as fh:
        data = fh.read()
    eol = data.index(b"\n")
    head = data[:eol].split()
    if len(head) != 5 or head[0].lower() != b"%%matrixmarket" or head[1].lower() != b"matrix" \
            or head[2].lower() != b"coordinate":
        raise ValueError(f"{path}: not a Matrix Market coordinate file")
    field, symmetry = head[3].lower(), head[4].lower()
    if field not in (b"pattern", b"real", b"integer", b"double"):
        raise ValueError(f"{path}: field must be pattern, real or integer")
    if symmetry not in (b"general", b"symmetric"):
        raise ValueError(f"{path}: symmetry must be general or symmetric")
    pos = eol + 1
    while True:  # comments and blank lines before the size line
        nxt = data.find(b"\n", pos)
        line = data[pos:nxt if nxt >= 0 else len(data)].strip()
        if line and not line.startswith(b"%"):
            break
        if nxt < 0:
            raise ValueError(f"{path}: missing the size line")
        pos = nxt + 1
    rows, cols, nnz = (int(t) for t in line.split()[:3])
    body = data[nxt + 1:] if nxt >= 0 else b""
    width = 2 if field == b"pattern" else 3
    if b"%" in body:  # comments inside the body are rare; drop them
        body = b"\n".join(ln for ln in body.split(b"\n") if not ln.lstrip().startswith(b"%"))
    dtype = np.int64 if field == b"pattern" else np.float64
    try:  # fast C parser (0.1 s for cnr-2000); str.split is the slow fallback
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            vals = np.fromstring(body, dtype=dtype, sep=" ")
    except (DeprecationWarning, ValueError, AttributeError):
        vals = np.array(body.split(), dtype=dtype)
    if vals.size != nnz * width:
        raise ValueError(f"{path}: expected {nnz} entries of {width} numbers, "
                         f"found {vals.size} numbers")
    vals = vals.reshape(nnz, width)
    src = vals[:, 0].astype(np.int64) - 1
    dst = vals[:, 1].astype(np.int64) - 1
    if nnz and (src.min() < 0 or src.max() >= rows or dst.min() < 0 or dst.max() >= cols):
        raise ValueError(f"{path}: an index is out of range")
    if symmetry == b"symmetric":
        off = src != dst
        src, dst = np.concatenate([src, dst[off]]), np.concatenate([dst, src[off]])
    return max(rows, cols), src, dst


def csr_by_dst(nv, src, dst):
    """Sorts the edges by (destination, source); returns rowptr, src, dst."""
    import numpy as np

    order = np.lexsort((src, dst))
    src, dst = src[order], dst[order]
    rowptr = np.zeros(nv + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=nv), out=rowptr[1:])
    return rowptr, src, dst


# ---- references (float64, on the GPU) ---------------------------------------

def _chunk(ne, f):
    step = max(1, (1 << 26) // max(1, f))
    return [(a, min(ne, a + step)) for a in range(0, ne, step)]


def ref_aggregate(s, nv, reduce, weighted):
    import torch

    x = s["X"].double()
    f = x.shape[1]
    ne = s["src"].numel()
    out = torch.zeros(nv, f, dtype=torch.float64, device=x.device)
    if reduce == "max":
        out.fill_(-math.inf)
    for a, b in _chunk(ne, f):
        msg = x[s["src"][a:b]]
        if weighted:
            msg = msg * s["w"][a:b].double().unsqueeze(-1)
        idx = s["dst"][a:b]
        if reduce == "max":
            out.scatter_reduce_(0, idx.unsqueeze(-1).expand_as(msg), msg, "amax")
        else:
            out.index_add_(0, idx, msg)
    deg = (s["rowptr"][1:] - s["rowptr"][:-1]).double().unsqueeze(-1)
    if reduce == "max":
        out = torch.where(deg > 0, out, torch.zeros_like(out))  # empty rows give 0
    if reduce == "mean":
        out = out / deg.clamp(min=1)
    return out


def rel_l2(out, ref):
    """||out - ref|| / ||ref||, inf if out has a non-finite element."""
    import torch

    if out.shape != ref.shape:
        return math.inf
    if not bool(torch.isfinite(out).all()):
        return math.inf
    num = float((out.double() - ref).norm())
    den = float(ref.norm())
    return num / den if den > 0 else num


def check_edge_features(out, s, op):
    """Relative L2 of an [E] or [E, F] edge result, computed in chunks so
    that no float64 copy of a large [E, F] tensor is made."""
    import torch

    if not bool(torch.isfinite(out).all()):
        return math.inf
    x, y = s["X"], s["Y"]
    f = x.shape[1]
    ne = s["src"].numel()
    expect = (ne,) if op == "u_dot_v" else (ne, f)
    if tuple(out.shape) != expect:
        return math.inf
    num = den = 0.0
    for a, b in _chunk(ne, f):
        xs, yd = x[s["src"][a:b]].double(), y[s["dst"][a:b]].double()
        r = (xs * yd).sum(-1) if op == "u_dot_v" else xs + yd
        d = out[a:b].double() - r
        num += float((d * d).sum())
        den += float((r * r).sum())
    return math.sqrt(num / den) if den > 0 else math.sqrt(num)


def ref_softmax(s, nv):
    import torch

    sc = s["S"].double()
    dst = s["dst"]
    m = torch.full((nv,), -math.inf, dtype=torch.float64, device=sc.device)
    m.scatter_reduce_(0, dst, sc, "amax")
    e = torch.exp(sc - m[dst])
    z = torch.zeros(nv, dtype=torch.float64, device=sc.device).index_add_(0, dst, e)
    return e / z[dst]


# ---- timing -----------------------------------------------------------------

def time_median_ms(fn, sets, warmup, reps):
    """Median over `reps` of one call's time: each repeat calls fn on every
    input set in turn, between two CUDA events, and divides by their count."""
    import torch

    for _ in range(warmup):
        for s in sets:
            fn(s)
    torch.cuda.synchronize()
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        e0.record()
        for s in sets:
            fn(s)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / len(sets))
    times.sort()
    n = len(times)
    return times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])


def time_graph_ms(fn, sets, warmup, reps, graph_reps):
    """The median per call by graph replay: on a side stream, `warmup` eager
    rounds (at least one); then `graph_reps` rounds (each set once each;
    0: enough for about GRAPH_TARGET_MS from three more eager rounds, at
    most GRAPH_MAX_RUNS calls) captured into one torch.cuda.CUDAGraph,
    replayed once, then `reps` times back to back between events; each
    time over the calls. Returns (ms, rounds captured). Raises what torch
    raises when a call cannot be captured."""
    import torch

    most = max(1, GRAPH_MAX_RUNS // len(sets))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(warmup, 1)):
            for s in sets:
                fn(s)
    torch.cuda.current_stream().wait_stream(side)
    calls = graph_reps
    if calls == 0:
        per_round = time_median_ms(fn, sets, 0, 3) * len(sets)
        calls = math.ceil(GRAPH_TARGET_MS / per_round * (1 - 1e-6)) if per_round > 0 else most
    calls = max(1, min(calls, most))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            for _ in range(calls):
                for s in sets:
                    fn(s)
        graph.replay()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
        ev[0].record()
        for i in range(reps):
            graph.replay()
            ev[i + 1].record()
        ev[-1].synchronize()
        times = sorted(ev[i].elapsed_time(ev[i + 1]) / (calls * len(sets)) for i in range(reps))
    finally:
        try:
            graph.reset()  # its memory pool goes with it
        except RuntimeError:
            pass  # a capture that failed left nothing to free
    n = len(times)
    return (times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])), calls


def choose_sets(nbytes, l2, cap):
    """One input copy when it is at least twice L2, else enough copies for
    three times L2, at most `cap` (host overhead, not the cache, dominates the
    small graphs that would need more)."""
    if nbytes >= 2 * l2:
        return 1
    return max(2, min(cap, math.ceil(3 * l2 / nbytes)))


# ---- the peers --------------------------------------------------------------

def peer_table(nv):
    """(peer, op, fn) for the F-dependent operators."""
    import torch
    from torch_geometric.utils import scatter, spmm

    def sc(reduce, weighted):
        def fn(s):
            msg = s["X"][s["src"]]
            if weighted:
                msg = msg * s["w"].unsqueeze(-1)
            return scatter(msg, s["dst"], 0, dim_size=nv, reduce=reduce)
        return fn

    return [
        ("pyg_scatter", "copy_u_sum", sc("sum", False)),
        ("pyg_scatter", "u_mul_e_sum", sc("sum", True)),
        ("pyg_scatter", "copy_u_mean", sc("mean", False)),
        ("pyg_scatter", "copy_u_max", sc("max", False)),
        ("pyg_spmm", "copy_u_sum", lambda s: spmm(s["A1"], s["X"], reduce="sum")),
        ("pyg_spmm", "u_mul_e_sum", lambda s: spmm(s["Aw"], s["X"], reduce="sum")),
        ("pyg_spmm", "copy_u_mean", lambda s: spmm(s["A1"], s["X"], reduce="mean")),
        ("torch_sparse_csr", "copy_u_sum", lambda s: torch.sparse.mm(s["A1"], s["X"])),
        ("torch_sparse_csr", "u_mul_e_sum", lambda s: torch.sparse.mm(s["Aw"], s["X"])),
        ("torch_gather", "u_dot_v", lambda s: (s["X"][s["src"]] * s["Y"][s["dst"]]).sum(-1)),
        ("torch_gather", "u_add_v", lambda s: s["X"][s["src"]] + s["Y"][s["dst"]]),
    ]


def softmax_table(nv):
    from torch_geometric.utils import softmax

    return [
        ("pyg_softmax", "edge_softmax", lambda s: softmax(s["S"], s["dst"], num_nodes=nv)),
        ("pyg_softmax_ptr", "edge_softmax",
         lambda s: softmax(s["S"], None, ptr=s["rowptr"], num_nodes=nv)),
    ]


def make_set(g, f, gen):
    """One copy of the graph and of fresh random inputs on the GPU."""
    import torch

    dev = torch.device("cuda")
    nv, ne = g["nv"], g["ne"]
    s = {
        "rowptr": g["rowptr"].clone(),
        "src": g["src"].clone(),
        "dst": g["dst"].clone(),
        "w": torch.rand(ne, generator=gen, device=dev) + 0.5,
        "S": torch.randn(ne, generator=gen, device=dev) * 4.0,
    }
    if f:
        s["X"] = torch.rand(nv, f, generator=gen, device=dev) * 2 - 1
        s["Y"] = torch.rand(nv, f, generator=gen, device=dev) * 2 - 1
        s["A1"] = torch.sparse_csr_tensor(s["rowptr"], s["src"],
                                          torch.ones(ne, device=dev), (nv, nv))
        s["Aw"] = torch.sparse_csr_tensor(s["rowptr"], s["src"], s["w"], (nv, nv))
    return s


class Runner:
    def __init__(self, args, ceiling, l2):
        self.args, self.ceiling, self.l2 = args, ceiling, l2
        self.failed = 0

    def row(self, peer, op, graph, nv, ne, f, ms, ok, calls):
        nb = fewest_bytes(op, nv, ne, f)
        gbps = nb / (ms * 1e-3) / 1e9
        print(f"{peer},{op},{graph},{nv},{ne},{f},{ms:.5f},{gbps:.2f},"
              f"{gbps / self.ceiling:.4f},{int(ok)},{'graph' if calls else 'events'},{calls}",
              flush=True)

    def time(self, fn, sets, what):
        """(ms, calls per replay) as --timing asks; a capture that fails is
        noted and the call timed with events (calls 0)."""
        import torch

        a = self.args
        if a.timing == "graph":
            try:
                return time_graph_ms(fn, sets, a.warmup, a.reps, a.graph_reps)
            except (RuntimeError, NotImplementedError, ValueError, TypeError) as exc:
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                print(f"# note: {what}: graph capture failed ({type(exc).__name__}: {msg}); "
                      f"timed with events", flush=True)
                torch.cuda.synchronize()
        return time_median_ms(fn, sets, a.warmup, a.reps), 0

    def one(self, peer, op, fn, sets, ref_check, graph, nv, ne, f):
        """Checks fn on the first set, times it over all sets, checks the
        last set's result again, and prints the row (or a # skip line)."""
        import torch

        what = f"{peer} {op} {graph} F={f}"
        try:
            err = ref_check(fn(sets[0]))
            if not err < 1e-4:
                print(f"# WRONG {what} (first call): relative L2 error {err:.3g} "
                      f"against float64", flush=True)
            ms, calls = self.time(fn, sets, what)
            err2 = ref_check(fn(sets[-1])) if len(sets) > 1 else err
            if not err2 < 1e-4:
                print(f"# WRONG {what} (last set): relative L2 error {err2:.3g}", flush=True)
            ok = err < 1e-4 and err2 < 1e-4
            self.failed += not ok
            self.row(peer, op, graph, nv, ne, f, ms, ok, calls)
        except torch.cuda.OutOfMemoryError as exc:
            print(f"# skip {what}: out of GPU memory ({str(exc).splitlines()[0]})", flush=True)
            torch.cuda.empty_cache()
        except (RuntimeError, NotImplementedError, ValueError, TypeError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            print(f"# skip {what}: {type(exc).__name__}: {msg}", flush=True)

    def graph(self, name, path):
        import numpy as np
        import torch

        t0 = time.time()
        nv, src, dst = load_mtx_gz(path)
        rowptr, src, dst = csr_by_dst(nv, src, dst)
        ne = int(src.size)
        dev = torch.device("cuda")
        g = {"nv": nv, "ne": ne,
             "rowptr": torch.from_numpy(rowptr).to(dev),
             "src": torch.from_numpy(np.ascontiguousarray(src)).to(dev),
             "dst": torch.from_numpy(np.ascontiguousarray(dst)).to(dev)}
        t_read = time.time() - t0
        gen = torch.Generator(device=dev)
        gen.manual_seed(12345)

        # edge softmax: independent of F, once per graph
        nsets = choose_sets(fewest_bytes("edge_softmax", nv, ne, 1), self.l2, self.args.max_sets)
        sets = [make_set(g, 0, gen) for _ in range(nsets)]
        for peer, op, fn in softmax_table(nv):
            # each set has its own scores: check against the set actually used
            chk = _bind_check(sets, lambda s, o: rel_l2(o, ref_softmax(s, nv)))
            self.one(peer, op, fn, sets, chk, name, nv, ne, 1)
        del sets

        for f in self.args.F:
            nsets = choose_sets(fewest_bytes("u_mul_e_sum", nv, ne, f), self.l2,
                                self.args.max_sets)
            sets = [make_set(g, f, gen) for _ in range(nsets)]
            print(f"# {name} F={f}: {nsets} input set{'s' if nsets > 1 else ''} rotated",
                  flush=True)
            refs = {}
            for peer, op, fn in peer_table(nv):
                if op in ("u_dot_v", "u_add_v"):
                    chk = _bind_check(sets, lambda s, o, op=op: check_edge_features(o, s, op))
                else:
                    reduce = {"copy_u_sum": "sum", "u_mul_e_sum": "sum",
                              "copy_u_mean": "mean", "copy_u_max": "max"}[op]
                    chk = _bind_check(sets, lambda s, o, op=op, reduce=reduce: rel_l2(
                        o, _cached(refs, (id(s), op), lambda: ref_aggregate(
                            s, nv, reduce, op == "u_mul_e_sum"))))
                self.one(peer, op, fn, sets, chk, name, nv, ne, f)
            refs.clear()
            del sets
            torch.cuda.empty_cache()
        log(f"[pyg] {name}: |V| = {nv}, |E| = {ne}, read in {t_read:.1f} s, "
            f"all done in {time.time() - t0:.1f} s")


def _cached(cache, key, make):
    if key not in cache:
        cache[key] = make()
    return cache[key]


def _bind_check(sets, check):
    """A checker that knows which set produced the output: Runner.one checks
    sets[0] first and sets[-1] last, in that order."""
    state = {"n": 0}

    def fn(out):
        s = sets[0] if state["n"] == 0 else sets[-1]
        state["n"] += 1
        return check(s, out)
    return fn


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---- summary (no torch needed) ----------------------------------------------

SHORT = {"cusparse_csr_alg1": "cs1", "cusparse_csr_alg2": "cs2", "cusparse_csr_alg3": "cs3",
         "cusparse_coo_alg4": "co4", "cusparse_coo_alg1": "co1", "pyg_scatter": "psc",
         "pyg_spmm": "psp", "torch_sparse_csr": "tsc", "cusparse_sddmm": "sdd",
         "torch_gather": "tg", "pyg_softmax": "psm", "pyg_softmax_ptr": "psp_ptr"}


def read_csv(path):
    rows = []
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line or line.startswith("#") or line.startswith("peer,"):
                continue
            p = line.split(",")
            if len(p) not in (10, 12):  # 12: with timing,graph_calls (2026-11-28 on)
                continue
            rows.append({"peer": p[0], "op": p[1], "graph": p[2], "V": int(p[3]),
                         "E": int(p[4]), "F": int(p[5]), "ms": float(p[6]),
                         "gbps": float(p[7]), "frac": float(p[8]), "ok": p[9] == "1"})
    return rows


def summary(path):
    rows = read_csv(path)
    if not rows:
        print(f"no CSV rows in {path}")
        return 1
    best = {}  # (op, graph, F) -> row
    for r in rows:
        if not r["ok"] or r["peer"] == "cusparse_best":
            continue
        k = (r["op"], r["graph"], r["F"])
        if k not in best or r["ms"] < best[k]["ms"]:
            best[k] = r
    graphs = []
    for r in rows:
        if r["graph"] not in graphs:
            graphs.append(r["graph"])
    fs = sorted({r["F"] for r in rows if r["op"] == "u_mul_e_sum"})
    print("\n== best peer for u_mul_e_sum (weighted sum): median ms, peer, fraction of the "
          "fewest-bytes bound ==")
    print(f"{'graph':<17}" + "".join(f"{'F=' + str(f):>19}" for f in fs))
    for gname in graphs:
        cells = []
        for f in fs:
            r = best.get(("u_mul_e_sum", gname, f))
            cells.append(f"{r['ms']:8.4f} {SHORT.get(r['peer'], r['peer']):>3} "
                         f"{r['frac']:5.2f}" if r else f"{'-':>18}")
        print(f"{gname:<17}" + "".join(f"{c:>19}" for c in cells))
    print("peers: " + ", ".join(f"{v}={k}" for k, v in SHORT.items()))
    ops = []
    for r in rows:
        if r["op"] not in ops:
            ops.append(r["op"])
    print("\n== rows per op: measured / failed the check; best peer most often ==")
    for op in ops:
        mine = [r for r in rows if r["op"] == op and r["peer"] != "cusparse_best"]
        wins = {}
        for k, r in best.items():
            if k[0] == op:
                wins[r["peer"]] = wins.get(r["peer"], 0) + 1
        top = ", ".join(f"{p} {n}" for p, n in sorted(wins.items(), key=lambda t: -t[1]))
        print(f"{op:<13} {len(mine):4d} / {sum(not r['ok'] for r in mine):2d}   {top}")
    bad = [r for r in rows if not r["ok"]]
    if bad:
        print(f"\n{len(bad)} rows FAILED the check (ok=0): see '# WRONG' lines in the log")
    return 0


# ---- driver -----------------------------------------------------------------

def graph_reps_arg(text):
    try:
        v = int(text)
    except ValueError:
        v = -1
    if not 0 <= v <= GRAPH_MAX_RUNS:
        raise argparse.ArgumentTypeError(f"{text}: not a whole number from 0 to {GRAPH_MAX_RUNS}")
    return v


def parse_widths(text):
    out = [int(t) for t in text.replace(",", " ").split()]
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"bad width list '{text}'")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Formulas and method: bench/README.md.")
    ap.add_argument("--datasets", help="folder with NAME.mtx.gz files")
    ap.add_argument("--graphs", nargs="*", help="graph names (default: all 14 in MANIFEST order "
                    "that exist in the folder)")
    ap.add_argument("--F", type=parse_widths, default=[16, 32, 64, 128, 256],
                    help='feature widths, e.g. "16 32 64 128 256"')
    ap.add_argument("--ceiling", type=float, default=0.0,
                    help="copy ceiling in GB/s (default: measured here with torch)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--max-sets", type=int, default=16,
                    help="most input copies rotated against the cache (default 16)")
    ap.add_argument("--timing", choices=("graph", "events"), default="graph",
                    help="graph (default): time replays of a CUDA graph of the timed rounds, per "
                    "call; events: each round between events, launched from the host")
    ap.add_argument("--graph-reps", type=graph_reps_arg, default=0,
                    help="rounds captured per graph, 0 to 1024 (default 0: about 1 ms a replay)")
    ap.add_argument("--header", action="store_true", help="print the CSV header first")
    ap.add_argument("--summary", metavar="CSV", help="print the summary table of a CSV and exit")
    args = ap.parse_args(argv)

    if args.summary:
        return summary(args.summary)
    if not args.datasets:
        ap.error("--datasets is required (or --summary)")

    import warnings

    import torch
    import torch_geometric

    warnings.filterwarnings("ignore")
    if not torch.cuda.is_available():
        print("pyg_bench: no CUDA device visible to torch", file=sys.stderr)
        return 1
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 * 1024 * 1024)
    print(f"# pyg: torch={torch.__version__} torch_geometric={torch_geometric.__version__} "
          f"gpu={props.name} l2_mb={l2 / 1e6:.1f} warmup={args.warmup} reps={args.reps} "
          f"timing={args.timing} graph_reps={args.graph_reps}",
          flush=True)
    ceiling = args.ceiling
    if ceiling <= 0:
        a = torch.empty(1 << 28, dtype=torch.float32, device="cuda").fill_(1.0)
        b = torch.empty_like(a)
        ms = time_median_ms(lambda s: b.copy_(a), [None], 3, 10)
        ceiling = 2 * a.numel() * 4 / (ms * 1e-3) / 1e9
        del a, b
        print(f"# copy_ceiling_gbps={ceiling:.1f} (torch copy_; 1 GiB; read + written; "
              f"median of 10)", flush=True)
    else:
        print(f"# copy_ceiling_gbps={ceiling:.1f} (given)", flush=True)
    if args.header:
        print(HEADER, flush=True)

    names = args.graphs or [g for g in DEFAULT_GRAPHS
                            if os.path.exists(os.path.join(args.datasets, g + ".mtx.gz"))]
    runner = Runner(args, ceiling, l2)
    t0 = time.time()
    for name in names:
        path = os.path.join(args.datasets, name + ".mtx.gz")
        if not os.path.exists(path):
            path = os.path.join(args.datasets, name + ".mtx")
        if not os.path.exists(path):
            print(f"# skip graph {name}: no {name}.mtx.gz in {args.datasets}", flush=True)
            continue
        runner.graph(name, path)
    log(f"[pyg] all done in {time.time() - t0:.1f} s; {runner.failed} rows failed the check")
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())
