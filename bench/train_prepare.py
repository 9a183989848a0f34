"""What a training run needs compiled, without torch: the gop calls of the
models' layers (gop.plan), forward and derived backward, under the chosen
schedule and the default mapping; `--prepare` compiles them into
GOP_CACHE_DIR on a machine with LLVM."""
import os

import gop
import gop.plan as gplan

from train_common import ARCH, MODELS, SCHEDULE


def plan_calls(g, model, schedule=SCHEDULE):
    """The gop operator calls of one training step's forward of `model` on
    `g` (gop.plan, as gop.nn's layers make them): the first layer's input
    is the data (no gradient), the others' require one."""
    out = []
    for i, (kind, kw) in enumerate(ARCH[model]):
        kw = dict(kw)
        if kind == "gin":  # the layer aggregates its input: the MLP's width is not gop's
            kw = {"in_channels": kw["in_channels"], "train_eps": kw["train_eps"]}
        out += getattr(gplan, kind)(g, schedule=schedule, input_grad=i > 0, train=True, **kw)
    return out


def each_variant(g):
    """(model, call, schedule, joint) for every gop call the models make on
    graph g (plan_calls) and every way it is prepared and timed."""
    for m in MODELS:
        for c in plan_calls(g, m):
            for sched, joint in plan_variants(c):
                yield m, c, sched, joint


def plan_variants(c):
    """(schedule, joint) under which --ops times a call, and --prepare
    prepares it: the training's (SCHEDULE, joint) and the default mapping,
    and each input's gradient separately where there are several."""
    out = [(gplan.OWN, True), (None, True)]
    if len(c.wrt) > 1:
        out += [(gplan.OWN, False), (None, False)]
    return out


def graph_path(datasets, gname):
    return os.path.join(datasets, f"{gname}.mtx.gz")


def prepare(datasets, graphs):
    """Fills GOP_CACHE_DIR with every kernel the GPU run calls: gradcheck's
    (each operator of gop.stdlib and gop.layers and its joint gradient,
    default mapping: any graph will do) and the training's, from
    plan_calls() on each graph to be trained, under the schedule the call
    resolves there (gop_choose_schedule's pick at its width) and under the
    default mapping, joint and per input (--ops times them all)."""
    g = gop.Graph.open("grid:4x4")
    n, bad = 0, []
    for op in list(gop.stdlib) + list(gop.layers):
        try:
            op.prepare(g)
            n += 1
        except gop.GopError as e:
            bad.append(f"{op.name}: {str(e).splitlines()[-1]}")
        try:
            op.grad(tuple(s.name for s in op.inputs if s.dtype.startswith("f"))).prepare(g)
            n += 1
        except gop.GopError as e:
            bad.append(f"{op.name} grad: {' '.join(str(e).split())[:300]}")
    kernels = set()
    for gname in graphs:
        path = graph_path(datasets, gname)
        if not os.path.exists(path):
            bad.append(f"{path} is missing: nothing prepared for training on {gname}")
            continue
        tg = gop.Graph.open(path)
        for m, c, sched, joint in each_variant(tg):
            try:
                c.prepare(sched, joint)
                n += 1
            except gop.GopError as e:
                bad.append(f"{m} on {gname}: {c!r}: {' '.join(str(e).split())[:300]}")
            for k in c.kernels(sched, joint):
                kernels.add((gname, k[0], k[1] or "default mapping",
                             ", ".join(f"{e}={v}" for e, v in sorted(k[2].items()))))
    print(f"prepared {n} operator calls into {gop.cache_dir()}: {gop.cache_stats()}")
    print(f"training kernels ({len(kernels)}: graph, operator, schedule, extents):")
    for k in sorted(kernels):
        print("  " + " | ".join(k))
    for b in bad:
        print("  not prepared:", b)
    return 1 if bad else 0
