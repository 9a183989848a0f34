"""The training task and the training itself: a planted-partition task,
the models built with PyG's and gop's layers from the same weights, eager
and captured (gop.train.capture_step) training, and the checks of each
run's losses, gradients and accuracy against PyG."""
import statistics
import time

import numpy as np

import gop

import train_common as common
from train_common import (ARCH, FIN, K, LR, MODELS, SCHEDULE, TOL_ACC, TOL_GRAD, TOL_LOSS,
                          WARMUP, record, rel_l2)


def planted_partition(g, seed=0):
    """Labels: K communities grown from K random seed vertices by
    breadth-first search over the graph taken as undirected (ties to the
    last arc in edge order: numpy's fancy assignment, deterministic);
    vertices no seed reaches get a random label. Features: noisy one-hot."""
    rng = np.random.default_rng(seed)
    ei = g.edge_index
    a = np.concatenate([ei[0], ei[1]])
    b = np.concatenate([ei[1], ei[0]])
    n = g.num_nodes
    lab = np.full(n, -1, dtype=np.int64)
    seeds = rng.choice(n, size=K, replace=False)
    lab[seeds] = np.arange(K)
    while True:
        grow = (lab[a] >= 0) & (lab[b] < 0)
        if not grow.any():
            break
        lab[b[grow]] = lab[a[grow]]
    lost = lab < 0
    lab[lost] = rng.integers(0, K, size=int(lost.sum()))
    x = rng.normal(0.0, 1.5, size=(n, FIN)).astype(np.float32)
    x[np.arange(n), lab] += 1.0
    train = rng.random(n) < 0.5
    return x, lab, train


def build(torch, gnn, name, classes=K, **kw):
    """Model `name` of ARCH with the convolutions of `gnn` (PyG's
    torch_geometric.nn or gop.nn; `kw`, e.g. schedule=, goes to gop's):
    two layers, relu between them (GAT: elu)."""
    nn, Fn = torch.nn, torch.nn.functional
    kw = kw if gnn is gop.nn else {}
    if classes != K:
        raise ValueError("ARCH is written for K classes")

    def layer(kind, a):
        if kind == "gcn":
            return gnn.GCNConv(a["in_channels"], a["out_channels"], **kw)
        if kind == "gat":
            return gnn.GATConv(a["in_channels"], a["out_channels"], heads=a["heads"], **kw)
        if kind == "sage":
            return gnn.SAGEConv(a["in_channels"], a["out_channels"], **kw)
        mlp = nn.Sequential(nn.Linear(a["in_channels"], 64), nn.ReLU(),
                            nn.Linear(64, a["out_channels"]))
        return gnn.GINConv(mlp, train_eps=a["train_eps"], **kw)

    act = Fn.elu if name == "gat" else Fn.relu

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            (k1, a1), (k2, a2) = ARCH[name]
            self.conv1, self.conv2 = layer(k1, a1), layer(k2, a2)

        def forward(self, x, g):
            return self.conv2(act(self.conv1(x, g)), g)

    return Model()


def train_one(torch, model, x, y, train, test, g):
    """50 full-batch Adam steps: (losses, step-0 gradients by name, test
    accuracy, median epoch ms, peak torch memory, device memory growth)."""
    Fn = torch.nn.functional
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    cuda = x.is_cuda
    free0 = 0
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        free0, _ = torch.cuda.mem_get_info()
    losses, events, grads0 = [], [], None
    for step in range(common.STEPS):
        a, m, b = [torch.cuda.Event(enable_timing=True) if cuda else _Clock()
                   for _ in range(3)]
        a.record()
        opt.zero_grad(set_to_none=True)
        out = model(x, g)
        loss = Fn.cross_entropy(out[train], y[train])
        m.record()
        loss.backward()
        if step == 0:
            grads0 = {k: p.grad.detach().clone() for k, p in model.named_parameters()
                      if p.grad is not None}
        opt.step()
        b.record()
        losses.append(loss.detach())
        events.append((a, m, b))
    acc, peak, grown = _after_steps(torch, model, x, y, test, g, cuda, free0)
    times = [a.elapsed_time(b) for a, m, b in events[WARMUP:]]
    fwd = statistics.median(a.elapsed_time(m) for a, m, b in events[WARMUP:])
    return ([l.item() for l in losses], grads0, acc, statistics.median(times), peak, grown, fwd)


def _after_steps(torch, model, x, y, test, g, cuda, free0):
    """After a run's steps: (test accuracy, peak torch memory, growth of
    the device's used memory since free0 was read)."""
    free1 = peak = 0
    if cuda:
        torch.cuda.synchronize()
        free1, _ = torch.cuda.mem_get_info()
        peak = torch.cuda.max_memory_allocated()
    with torch.no_grad():
        pred = model(x, g).argmax(1)
        acc = (pred[test] == y[test]).float().mean().item()
    return acc, peak, max(0, free0 - free1)


def train_captured(torch, model, x, y, train_idx, test, g, mode="global"):
    """train_one's STEPS Adam steps (Adam capturable=True), the whole step
    captured by gop.train.capture_step and replayed: the same tuple (the
    forward alone is not timed: nan). The loss takes the training rows by
    index (train_idx), since a boolean mask waits on the host. mode:
    torch.cuda.graph's capture_error_mode. Raises gop.train.CaptureError
    when the step cannot be captured."""
    Fn = torch.nn.functional
    opt = torch.optim.Adam(model.parameters(), lr=LR, capturable=True)
    y_train = y[train_idx]

    def step():
        opt.zero_grad(set_to_none=True)
        loss = Fn.cross_entropy(model(x, g).index_select(0, train_idx), y_train)
        loss.backward()
        opt.step()
        return loss

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    free0, _ = torch.cuda.mem_get_info()
    # warm-up steps (undone: weights, Adam state, RNG), then one capture
    cap = gop.train.capture_step(step, optimizer=opt, model=model, capture_error_mode=mode)
    losses, events, grads0 = [], [], None
    for i in range(common.STEPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        loss = cap.replay()
        b.record()
        losses.append(loss.detach().clone())  # the next replay overwrites it
        if i == 0:
            grads0 = {k: p.grad.detach().clone() for k, p in model.named_parameters()
                      if p.grad is not None}
        events.append((a, b))
    acc, peak, grown = _after_steps(torch, model, x, y, test, g, True, free0)
    times = [a.elapsed_time(b) for a, b in events[WARMUP:]]
    del cap
    return ([v.item() for v in losses], grads0, acc, statistics.median(times), peak, grown,
            float("nan"))


def run_captured(torch, make, x, y, train_idx, test, g):
    """train_captured on a model from make(), under torch's capture mode
    ("global"), and again under "relaxed" where the capture refused a gop
    call (a driver counting gop's pointer query, cuPointerGetAttributes
    once per new address, as unsafe during a capture): (result, mode).
    Raises CaptureError when neither captures."""
    for mode in ("global", "relaxed"):
        model = make()
        try:
            return train_captured(torch, model, x, y, train_idx, test, g, mode), mode
        except gop.train.CaptureError as e:
            if mode == "relaxed" or not isinstance(e.error, gop.GopError):
                raise
            print(f"     capture under 'global' refused a gop call ({e.cause}): again "
                  "under capture_error_mode='relaxed'", flush=True)
        finally:
            del model


def _first_line(e):
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


class _Clock:
    """torch.cuda.Event's interface on the host clock (dev="cpu" runs)."""

    def record(self):
        self.t = time.perf_counter()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


def train_graph(torch, tg, path, gname, rows, summary, dev="cuda", models=MODELS):
    """Each model trained by PyG, by gop under SCHEDULE (checked against
    PyG), by PyG again (its own drift), by gop under the default mapping
    (timed beside it: what the schedule choice gains), by gop with the whole
    step captured as a CUDA graph (checked against PyG) and by PyG captured
    where it can be (timed beside it). dev="cpu": the same on the
    interpreter (a smoke test without a GPU), without the captured runs."""
    g = gop.Graph.open(path)
    xn, lab, trn = planted_partition(g)
    x = torch.from_numpy(xn).to(dev)
    y = torch.from_numpy(lab).to(dev)
    train = torch.from_numpy(trn).to(dev)
    test = ~train
    train_idx = train.nonzero().squeeze(1)  # the captured steps index by it
    ei = torch.from_numpy(g.edge_index).to(dev)
    curves = {}
    for m in models:
        torch.manual_seed(0)
        ref = build(torch, tg.nn, m, K).to(dev)
        init = {k: v.detach().clone() for k, v in ref.state_dict().items()}
        mine = build(torch, gop.nn, m, K, schedule=SCHEDULE).to(dev)
        mine.load_state_dict(init, strict=True)
        ref2 = build(torch, tg.nn, m, K).to(dev)
        ref2.load_state_dict(init, strict=True)
        base = build(torch, gop.nn, m, K, schedule=None).to(dev)
        base.load_state_dict(init, strict=True)
        r_pyg = train_one(torch, ref, x, y, train, test, ei)
        r_gop = train_one(torch, mine, x, y, train, test, g)
        r_pyg2 = train_one(torch, ref2, x, y, train, test, ei)
        r_base = train_one(torch, base, x, y, train, test, g)
        del base
        # the whole step as one CUDA graph: gop's model (checked), PyG's
        # (where it captures; timed beside it)
        r_cap = r_pcap = None
        if dev == "cpu":
            note_cap = note_pcap = "skipped: --device cpu"
            print(f"     {m} on {gname}: captured runs skipped on --device cpu (CUDA graphs "
                  "capture CUDA work only)", flush=True)
        else:
            note_cap = note_pcap = ""

            def make(gnn, **kw):
                def f():
                    model = build(torch, gnn, m, K, **kw).to(dev)
                    model.load_state_dict(init, strict=True)
                    return model
                return f
            try:
                r_cap, mode = run_captured(torch, make(gop.nn, schedule=SCHEDULE), x, y,
                                           train_idx, test, g)
                if mode != "global":
                    note_cap = f"capture_error_mode={mode!r}"
            except Exception as e:  # noqa: BLE001 - recorded as the check's failure
                import traceback
                traceback.print_exc()
                note_cap = (f"not capturable: {e.cause}" if isinstance(e, gop.train.CaptureError)
                            else f"failed: {_first_line(e)}")
            record("train", f"{m} on {gname}: gop captured", r_cap is not None,
                   "whole step captured (gop.train.capture_step) and replayed "
                   f"{common.STEPS} times"
                   + (f" ({note_cap})" if note_cap else "") if r_cap is not None else note_cap)
            try:
                r_pcap, mode = run_captured(torch, make(tg.nn), x, y, train_idx, test, ei)
                if mode != "global":
                    note_pcap = f"capture_error_mode={mode!r}"
            except gop.train.CaptureError as e:
                note_pcap = f"not capturable: {e.cause}"
            except Exception as e:  # noqa: BLE001 - a fact about PyG, not a check
                note_pcap = f"not capturable: {_first_line(e)}"
            if r_pcap is None:
                print(f"     {m} on {gname}: PyG captured: {note_pcap}", flush=True)
                # a failed capture must leave the device usable for what follows
                torch.cuda.synchronize()
        nan_curve = [float("nan")] * common.STEPS
        l_pyg, l_gop, l_pyg2 = r_pyg[0], r_gop[0], r_pyg2[0]
        l_cap = r_cap[0] if r_cap else nan_curve
        l_pcap = r_pcap[0] if r_pcap else nan_curve
        curves[m] = (l_pyg, l_gop)
        for step in range(common.STEPS):
            rows.append({"graph": gname, "model": m, "step": step, "loss_pyg": l_pyg[step],
                         "loss_gop": l_gop[step], "loss_pyg_rerun": l_pyg2[step],
                         "loss_gop_captured": l_cap[step], "loss_pyg_captured": l_pcap[step]})
        drift = max(abs(a - b) / abs(b) for a, b in zip(l_gop, l_pyg))
        drift_pyg = max(abs(a - b) / abs(b) for a, b in zip(l_pyg2, l_pyg))
        nan = float("nan")
        drift_cap = (max(abs(a - b) / abs(b) for a, b in zip(l_cap, l_pyg)) if r_cap else nan)
        drift_pcap = (max(abs(a - b) / abs(b) for a, b in zip(l_pcap, l_pyg)) if r_pcap
                      else nan)
        # PyG before 2.5 names GATConv's projection lin_src (gop: lin)
        gops = {k: v for k, v in r_gop[1].items()}
        pygs = {k.replace("lin_src.", "lin."): v for k, v in r_pyg[1].items()
                if ".lin_dst." not in k or k.replace("lin_dst.", "lin_src.") not in r_pyg[1]}
        gerr = {k: rel_l2(gops[k], pygs[k]) for k in pygs if k in gops}
        missing = sorted(set(pygs) - set(gops))
        s = {"graph": gname, "model": m, "nodes": g.num_nodes, "edges": g.num_edges,
             "max_rel_loss_diff": drift, "max_rel_loss_diff_pyg_rerun": drift_pyg,
             "worst_step0_grad_rel_l2": max(gerr.values()) if gerr else float("inf"),
             "final_loss_pyg": l_pyg[-1], "final_loss_gop": l_gop[-1],
             "acc_pyg": r_pyg[2], "acc_gop": r_gop[2],
             "epoch_ms_pyg": r_pyg[3], "epoch_ms_gop": r_gop[3],
             "forward_ms_pyg": r_pyg[6], "forward_ms_gop": r_gop[6],
             "speedup": r_pyg[3] / r_gop[3],
             "peak_mb_pyg": r_pyg[4] / 2**20, "peak_mb_gop": r_gop[4] / 2**20,
             "device_growth_mb_pyg": r_pyg[5] / 2**20, "device_growth_mb_gop": r_gop[5] / 2**20,
             "schedule_gop": SCHEDULE,
             "epoch_ms_gop_default": r_base[3], "forward_ms_gop_default": r_base[6],
             "speedup_default": r_pyg[3] / r_base[3],
             "max_rel_loss_diff_default": max(abs(a - b) / abs(b)
                                              for a, b in zip(r_base[0], l_pyg)),
             "epoch_ms_gop_captured": r_cap[3] if r_cap else nan,
             "speedup_captured": r_pyg[3] / r_cap[3] if r_cap else nan,
             "acc_gop_captured": r_cap[2] if r_cap else nan,
             "peak_mb_gop_captured": r_cap[4] / 2**20 if r_cap else nan,
             "device_growth_mb_gop_captured": r_cap[5] / 2**20 if r_cap else nan,
             "max_rel_loss_diff_captured": drift_cap, "gop_captured_note": note_cap,
             "epoch_ms_pyg_captured": r_pcap[3] if r_pcap else nan,
             "speedup_captured_vs_pyg_captured": (r_pcap[3] / r_cap[3]
                                                  if r_cap and r_pcap else nan),
             "acc_pyg_captured": r_pcap[2] if r_pcap else nan,
             "max_rel_loss_diff_pyg_captured": drift_pcap, "pyg_captured_note": note_pcap}
        summary.append(s)
        record("train", f"{m} on {gname}: step-0 gradients",
               not missing and s["worst_step0_grad_rel_l2"] <= TOL_GRAD,
               f"worst parameter gradient rel L2 {s['worst_step0_grad_rel_l2']:.2e}"
               + (f"; no gradient in gop for {missing}" if missing else ""))
        # within TOL_LOSS, or within twice what PyG differs from itself
        # (its scatter atomics: GIN with a trainable eps on pubmed drifts
        # 3e-3 between two PyG runs)
        record("train", f"{m} on {gname}: loss curve", drift <= max(TOL_LOSS, 2 * drift_pyg),
               f"max relative difference over {common.STEPS} steps {drift:.2e} (PyG vs itself "
               f"{drift_pyg:.2e}); final loss PyG {l_pyg[-1]:.4f}, gop {l_gop[-1]:.4f}")
        record("train", f"{m} on {gname}: accuracy", abs(r_pyg[2] - r_gop[2]) <= TOL_ACC,
               f"test accuracy PyG {r_pyg[2]:.4f}, gop {r_gop[2]:.4f}")
        if r_cap:
            # against PyG captured where it captures: Adam(capturable=True)
            # rounds its step differently from the eager Adam, and both
            # captured runs drift from the eager ones alike (H100 session
            # 11: GIN on pubmed, gop captured 2.5e-2 and PyG captured 2.4e-2
            # from PyG eager, 5e-4 from each other); else against PyG eager
            ref, l_ref = ("PyG captured", l_pcap) if r_pcap else ("PyG", l_pyg)
            d_ref = max(abs(a - b) / abs(b) for a, b in zip(l_cap, l_ref))
            record("train", f"{m} on {gname}: loss curve, gop captured",
                   d_ref <= max(TOL_LOSS, 2 * drift_pyg),
                   f"max relative difference from {ref} over {common.STEPS} steps "
                   f"{d_ref:.2e} (PyG "
                   f"vs itself {drift_pyg:.2e}); final loss {ref} {l_ref[-1]:.4f}, gop "
                   f"captured {l_cap[-1]:.4f}")
            record("train", f"{m} on {gname}: accuracy, gop captured",
                   abs(r_pyg[2] - r_cap[2]) <= TOL_ACC,
                   f"test accuracy PyG {r_pyg[2]:.4f}, gop captured {r_cap[2]:.4f}")
        print(f"     {m} on {gname}: epoch PyG {r_pyg[3]:.2f} ms, gop {r_gop[3]:.2f} ms "
              f"({s['speedup']:.2f}x; forward + loss PyG {r_pyg[6]:.2f} ms, gop "
              f"{r_gop[6]:.2f} ms); peak torch memory PyG {s['peak_mb_pyg']:.0f} MB, "
              f"gop {s['peak_mb_gop']:.0f} MB (+{s['device_growth_mb_gop']:.0f} MB device "
              f"growth); gop under the default mapping {r_base[3]:.2f} ms "
              f"({s['speedup_default']:.2f}x, forward {r_base[6]:.2f} ms, loss within "
              f"{s['max_rel_loss_diff_default']:.1e})", flush=True)
        if r_cap:
            print(f"     {m} on {gname}: gop captured {r_cap[3]:.2f} ms "
                  f"({s['speedup_captured']:.2f}x PyG eager; loss within {drift_cap:.1e}, "
                  f"accuracy {r_cap[2]:.4f}, peak "
                  f"{s['peak_mb_gop_captured']:.0f} MB); PyG captured "
                  + (f"{r_pcap[3]:.2f} ms (gop captured "
                     f"{s['speedup_captured_vs_pyg_captured']:.2f}x it)" if r_pcap
                     else note_pcap), flush=True)
        del ref, ref2, mine
        if dev != "cpu":
            torch.cuda.empty_cache()
    return curves
