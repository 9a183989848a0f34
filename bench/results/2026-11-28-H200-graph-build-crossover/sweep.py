import time, sys, json
import numpy as np, torch
import gop
from gop.graph import DEVICE_BUILD_MIN_EDGES
assert gop.gpu_available(), gop.device_status()
dev = torch.device("cuda")
op = gop.stdlib.copy_u_sum
def sync(): torch.cuda.synchronize()
def timed(f, reps=9):
    ts = []
    for _ in range(reps):
        sync(); t = time.perf_counter(); r = f(); sync(); ts.append(time.perf_counter() - t); del r
    return float(np.median(ts[1:]) * 1e3)
rows = []
print(torch.cuda.get_device_name(), "threshold", DEVICE_BUILD_MIN_EDGES)
for ratio in (1, 7):
    for E in (2000, 5000, 10000, 20000, 35000, 50000, 70000, 100000, 200000, 500000, 1166243):
        nv = max(E // ratio, 2)
        g0 = torch.Generator(device="cuda").manual_seed(E)
        ei = torch.randint(0, nv, (2, E), device=dev, generator=g0)
        x = torch.randn(nv, 32, device=dev)
        r = {"edges": E, "nodes": nv}
        for name, db in (("device", True), ("host", False)):
            r[name + "_build_ms"] = timed(lambda: gop.Graph.from_edge_index(ei, nv, device_build=db))
            def both():
                g = gop.Graph.from_edge_index(ei, nv, device_build=db)
                return op(g, x)
            r[name + "_build_first_op_ms"] = timed(both)
        gd = gop.Graph.from_edge_index(ei, nv, device_build=True)
        gh = gop.Graph.from_edge_index(ei, nv, device_build=False)
        r["equal"] = bool(torch.equal(op(gd, x), op(gh, x)))
        r["rule"] = "device" if gop.Graph.from_edge_index(ei, nv).device_built else "host"
        rows.append(r)
        print(f"E={E:8d} V={nv:8d} build dev {r['device_build_ms']:7.2f} host {r['host_build_ms']:7.2f} ms;"
              f" build+first op dev {r['device_build_first_op_ms']:7.2f} host {r['host_build_first_op_ms']:7.2f} ms;"
              f" equal {r['equal']} rule {r['rule']}", flush=True)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
