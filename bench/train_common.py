"""What every part of bench/train.py shares: the run's constants, the
models' shapes, and the record of checks (tests/gpu/pyg_common.py, put on
the path here). STEPS is set by train.py's --steps: read it as
train_common.STEPS, not imported by value."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu"))
from pyg_common import (finish, recorder, rel_l2, report_checks, report_head,  # noqa: E402,F401
                        start)

STEPS, WARMUP, LR = 50, 5, 0.01
K, FIN = 8, 64
TOL_GRAD, TOL_LOSS, TOL_ACC = 1e-4, 1e-3, 0.005
EXT = {"F": 16, "H": 4, "C": 8}
MODELS = ("gcn", "gat", "sage", "gin")
# The schedule the gop models train with: gop_choose_schedule's pick for
# every forward and derived operator, per graph and width (gop.nn, "auto");
# each model is also timed under the default mapping (None) beside it.
SCHEDULE = "auto"

# The models, torch-free: per layer, its kind and constructor arguments.
# build() makes them with PyG's and gop's classes; plan_calls() gives the
# gop operator calls of the same layers (gop.plan, which gop.nn's forward
# methods use too), from which --prepare prepares exactly their kernels.
ARCH = {
    "gcn": (("gcn", {"in_channels": FIN, "out_channels": 16}),
            ("gcn", {"in_channels": 16, "out_channels": K})),
    "gat": (("gat", {"in_channels": FIN, "out_channels": 8, "heads": 8}),
            ("gat", {"in_channels": 64, "out_channels": K, "heads": 1})),
    "sage": (("sage", {"in_channels": FIN, "out_channels": 64}),
             ("sage", {"in_channels": 64, "out_channels": K})),
    # GINConv(MLP(in, 64, out), train_eps=True)
    "gin": (("gin", {"in_channels": FIN, "out_channels": 64, "train_eps": True}),
            ("gin", {"in_channels": 64, "out_channels": K, "train_eps": True})),
}

results, record = recorder(9)
