"""bench/train.py: training with gop's autograd on the GPU, against PyG
(tests/gpu/train.sh runs it from the carried build; tools/gpu-prepare.sh
prepares the kernels it needs).

  packs     before a graph is trained: every kernel of its training plan
            (plan_calls: gop.plan's calls of the models' layers, forward and
            derived backward, under the chosen schedule and the default
            mapping) is in the carried packs (this gop has no LLVM).
  train     full-batch training of GCN, GAT, GraphSAGE and GIN on each graph
            (default pubmed and ogbn-arxiv), gop.nn against
            torch_geometric.nn: same initial weights (PyG's state_dict
            loaded into gop's model), same optimiser (Adam, lr 0.01), no
            dropout, 50 steps. A planted-partition task the graph predicts:
            labels are K = 8 communities grown by breadth-first search from
            K seed vertices (so neighbours mostly share a label), features
            a noisy one-hot of the label (signal 1, Gaussian noise 1.5, plus
            pure-noise columns), half the vertices train, half test; numpy
            seed 0. Records per step the loss of both (and of a second PyG
            run: PyG's own nondeterminism, its scatter atomics, is the noise
            floor), the parameter gradients of step 0, final test accuracies,
            epoch time (CUDA events around forward + backward + Adam step,
            median of the steps after 5 warm-up steps; the forward and loss
            alone beside it) and peak device
            memory (torch.cuda.max_memory_allocated; gop's own device
            memory, the graph's CSR/CSC and its kernels' temporaries, is
            outside torch's allocator: it is reported separately as the
            growth of cudaMemGetInfo's used memory over the run). gop's
            models train with schedule="auto" (SCHEDULE: gop_choose_schedule's
            pick for each forward and derived operator at its graph and
            width); the same model under the default mapping is timed beside
            it (its loss difference reported, not checked).
            "gop captured": the same gop model (same initial weights, under
            SCHEDULE) trained with Adam(lr, capturable=True), its whole
            step (zero_grad, forward, loss, backward through gop's autograd
            Functions, Adam step) captured once into a CUDA graph by
            gop.train.capture_step and replayed STEPS times: no Python, no
            autograd bookkeeping and no per-call checks in the epoch, only
            the step's kernels, launched as one graph. Every kernel is
            prepared before the capture (check_packs, then capture_step's
            warm-up steps, whose changes to weights, Adam state and RNG it
            undoes, so that replay k is eager step k). The loss is indexed
            by the training vertices' indices, not the boolean mask (a mask
            index waits on the host, which a capture cannot). Its loss
            curve and accuracy are checked against PyG as the eager run's
            are; its epoch is CUDA events around replay(), median after
            the warm-up steps. PyG's model is captured the same way where
            it can be (Adam capturable too): PyG's GCNConv and GATConv
            drop and add self loops through boolean masks (a host wait), so
            their capture is expected to fail; the table then says "not
            capturable" with torch's first line, a fact about PyG, not a
            failed check. On --device cpu both are skipped (CUDA graphs
            capture CUDA work only).
  ops       each distinct gop call of the training, forward and backward
            (joint, and per input where there are several), under the
            default mapping and under the chosen schedules: median of 20
            launches between CUDA events, random inputs.
  gradcheck every operator the package exposes (gop.stdlib's 86 and
            gop.layers' 10): torch.autograd gradients of the gop operator
            (its derived backward on the GPU) against torch.autograd
            through an equivalent torch computation (gathers by src/dst,
            index_add / scatter_reduce, the softmax formula, leaky_relu,
            elu), on CUDA, relative L2 per input; on cora.

Tolerances (float32 everywhere):
  gradcheck       relative L2 <= 1e-4 per input gradient: both sides sum the
                  same terms in float32 in different orders (atomics in
                  torch's index_add_, sequential per vertex or edge in
                  gop): about 1e-6 relative per sum, times the depth of
                  the chain (softmax, division) - 1e-4 leaves two orders
                  of margin and still catches any wrong term (a missing
                  edge or a wrong degree is >= 1e-2 on these graphs).
  loss curves     |loss_gop - loss_pyg| <= 1e-3 * |loss_pyg| at each of
                  the 50 steps. The forward alone agrees to ~1e-6; Adam
                  divides each gradient by the root of its running square,
                  so a rounding difference in a near-zero gradient element
                  can change its update by up to lr, and such differences
                  compound over steps. The second PyG run shows the same
                  drift from PyG's own nondeterministic atomics; the check
                  also reports gop vs PyG's drift beside it.
  accuracy        final test accuracies within 0.5 percentage points
                  (predictions near a tie may flip between float orders).

  python3 bench/train.py --datasets DIR --out DIR [--graphs "pubmed ogbn-arxiv"]
        [--models "gcn gat sage gin"] [--skip "gradcheck train ops"] [--steps 50]
  python3 bench/train.py --prepare [--datasets DIR --graphs ...]
        (no GPU, no torch: fills GOP_CACHE_DIR with every kernel the run
        calls on those graphs, and lists the training's)
  python3 bench/train.py --device cpu --steps 6 --graphs cora --skip gradcheck
        (a smoke test of the whole script on the interpreter, no GPU; the
        captured runs are skipped)
Writes OUT/train.csv (one row per graph, model, framework and step),
OUT/train_summary.csv, OUT/gradcheck.csv, OUT/ops.csv, OUT/train.json,
OUT/train.md and OUT/loss_<graph>.svg (loss curves, SVG written by hand);
exits 1 if a check failed.
"""
import argparse
import os
import sys
import time

import gop

import train_common as common
from train_common import MODELS, TOL_ACC, TOL_GRAD, TOL_LOSS, finish, record, results, start
from train_prepare import graph_path, prepare
from train_gradcheck import gradcheck
from train_models import train_graph
from train_ops import check_packs, time_ops
from train_report import svg_curves, write_csv, write_report


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prepare", action="store_true")
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--out", default="train-out")
    ap.add_argument("--graphs", default="pubmed ogbn-arxiv")
    ap.add_argument("--small", default="cora", help="graph of the gradcheck section")
    ap.add_argument("--skip", default="", help="sections to skip: gradcheck, train, ops")
    ap.add_argument("--models", default=" ".join(MODELS), help="models to train")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: a smoke test of this script on the interpreter, no GPU")
    ap.add_argument("--steps", type=int, default=common.STEPS, help="training steps")
    a = ap.parse_args()
    common.STEPS = a.steps
    dev = a.device
    if a.prepare:
        return prepare(a.datasets, a.graphs.split())
    import torch
    import torch_geometric as tg
    import torch_geometric.nn  # noqa: F401
    import gop.nn  # noqa: F401
    import gop.train  # noqa: F401
    os.makedirs(a.out, exist_ok=True)
    ready, what = start(results, torch, tg.__version__,
                        tolerances={"gradcheck_rel_l2": TOL_GRAD, "loss_rel": TOL_LOSS,
                                    "accuracy_abs": TOL_ACC})
    print(f"== gop {gop.__version__} on {what}; torch {torch.__version__}, PyG {tg.__version__}",
          flush=True)
    if dev == "cuda" and not ready:
        record("setup", "GPU", False, what)
        write_report(a.out, [])
        return 1
    skip = set(a.skip.split())
    models = tuple(a.models.split())
    summary, rows, grows, orows = [], [], [], []
    if "gradcheck" not in skip:
        t0 = time.time()
        small = os.path.join(a.datasets, f"{a.small}.mtx.gz")
        g = gop.Graph.open(small if os.path.exists(small) else "rmat:12:8")
        try:
            gradcheck(torch, g, grows, dev=dev)
        except Exception as e:  # noqa: BLE001 - a section's crash is its failure
            import traceback
            traceback.print_exc()
            record("gradcheck", "section", False, f"{type(e).__name__}: {e}")
        write_csv(os.path.join(a.out, "gradcheck.csv"), grows)
        print(f"== gradcheck: {time.time() - t0:.1f} s", flush=True)
    for gname in a.graphs.split():
        path = graph_path(a.datasets, gname)
        if not os.path.exists(path):
            record("train", gname, False, f"{path} is missing")
            continue
        if not ({"train", "ops"} - skip):
            break
        if not check_packs(gop.Graph.open(path), gname):
            continue
        if "train" not in skip:
            t0 = time.time()
            try:
                curves = train_graph(torch, tg, path, gname, rows, summary, dev=dev,
                                     models=models)
                svg_curves(os.path.join(a.out, f"loss_{gname}.svg"), gname, curves)
            except Exception as e:  # noqa: BLE001
                import traceback
                traceback.print_exc()
                record("train", gname, False, f"{type(e).__name__}: {e}")
            print(f"== train {gname}: {time.time() - t0:.1f} s", flush=True)
        if "ops" not in skip:
            t0 = time.time()
            try:
                time_ops(torch, gop.Graph.open(path), gname, orows, dev=dev,
                         reps=20 if dev == "cuda" else 2)
            except Exception as e:  # noqa: BLE001
                import traceback
                traceback.print_exc()
                record("ops", gname, False, f"{type(e).__name__}: {e}")
            print(f"== ops {gname}: {time.time() - t0:.1f} s", flush=True)
    write_csv(os.path.join(a.out, "train.csv"), rows)
    write_csv(os.path.join(a.out, "train_summary.csv"), summary)
    write_csv(os.path.join(a.out, "ops.csv"), orows)
    write_report(a.out, summary, orows)
    return finish(results)


if __name__ == "__main__":
    sys.exit(main())
