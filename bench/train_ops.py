"""The training's kernels on the GPU: every one carried as a pack, and each
gop call of the training timed alone, forward and backward, under the
default mapping and the chosen schedules."""
import statistics

import gop
import gop.plan as gplan

from train_common import MODELS, record
from train_prepare import each_variant, plan_calls
from train_models import _Clock


def check_packs(g, gname):
    """Every kernel of plan_calls() x plan_variants() on this graph loaded
    and prepared on the GPU before anything is timed. This gop has no LLVM,
    so each must come from the carried packs: a missing one is named here
    (the preparation and the run disagree), not met halfway through."""
    missing, n = [], 0
    for m, c, sched, joint in each_variant(g):
        try:
            c.prepare(sched, joint)
            n += 1
        except gop.GopError as e:
            lines = [ln for ln in str(e).splitlines() if "error" in ln] or [str(e)]
            missing.append(f"{m}: {c.op.name} {c.ext} schedule "
                           f"{'own' if sched == gplan.OWN else sched} joint {joint}: "
                           f"{lines[0][:200]}")
    record("packs", f"{gname}: every kernel of the training plan is carried", not missing,
           f"{n} operator calls prepared (forward and backward, chosen and default)"
           + "".join(f"\n       missing: {x}" for x in missing))
    return not missing


def median_ms(torch, fn, reps=20, warmup=3, dev="cuda"):
    for _ in range(warmup):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          if dev != "cpu" else (_Clock(), _Clock()) for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    if dev != "cpu":
        torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)


def time_ops(torch, g, gname, rows, dev="cuda", reps=20):
    """Each distinct gop call of the training on this graph, forward and
    backward (joint, and per input where there are several), under the
    default mapping and under the call's schedule (SCHEDULE resolved):
    which derived operators the chooser's pick helps, and which it hurts."""
    seen = set()
    for m in MODELS:
        for c in plan_calls(g, m):
            key = (c.op.name, id(c.graph), tuple(sorted(c.ext.items())), c.wrt)
            if key in seen:
                continue
            seen.add(key)
            gen = torch.Generator(device=dev).manual_seed(0)
            xs = [torch.rand(s.shape(c.graph, c.ext), generator=gen, device=dev) + 0.5
                  for s in c.op.inputs]
            for joint in ((True, False) if len(c.wrt) > 1 else (True,)):
                row = {"graph": gname, "model": m, "op": c.op.name,
                       "extents": " ".join(f"{k}={v}" for k, v in sorted(c.ext.items())),
                       "wrt": ",".join(c.wrt), "joint": joint}
                for label, sched in (("default", None), ("chosen", c.schedule)):
                    fs = c.kernels(sched, joint)
                    row[f"schedule_{label}"] = "; ".join(f"{k[0]}: {k[1] or 'default'}"
                                                         for k in fs)
                    y = c.op(c.graph, *xs, schedule=sched)
                    outs = list(y) if isinstance(y, tuple) else [y]
                    row[f"fwd_ms_{label}"] = median_ms(
                        torch, lambda: c.op(c.graph, *xs, schedule=sched), reps, dev=dev)
                    gr = c.gradient(joint)
                    if gr is None:
                        row[f"bwd_ms_{label}"] = ""
                        continue
                    dy = [torch.randn(o.shape, generator=gen, device=dev) for o in outs]
                    bs = gop.core.backward_schedule(sched)
                    row[f"bwd_ms_{label}"] = median_ms(
                        torch, lambda: gr(c.graph, xs, outs, dy, schedule=bs), reps, dev=dev)
                rows.append(row)
                b_d, b_c = row["bwd_ms_default"], row["bwd_ms_chosen"]
                print(f"     ops {gname} {c.op.name} {row['extents']} wrt {row['wrt'] or '-'}"
                      f"{'' if joint else ' (per input)'}: forward {row['fwd_ms_default']:.3f}"
                      f" -> {row['fwd_ms_chosen']:.3f} ms"
                      + (f", backward {b_d:.3f} -> {b_c:.3f} ms ({b_d / b_c:.2f}x)"
                         if b_d != "" else "")
                      + f" [{row['schedule_chosen']}]", flush=True)
