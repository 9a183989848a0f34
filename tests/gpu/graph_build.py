"""Graph building on the GPU (tests/gpu/graph_build.sh runs this there).

  build   for R-MAT edge_index generated on the GPU (scales 18, 20 and 22,
          edge factor 16: 4M, 17M and 67M edges) and ogbn-arxiv: times
          gop.Graph.from_edge_index on the CUDA tensor (the device build,
          median of 5, the statistics' one synchronisation included) against
          the host build of the same edge_index (copied to the host first,
          the copy timed apart); checks the device build's arrays equal the
          host build's (read back from the .gopg file libgop writes) where
          the graph has at most 20M edges, its statistics everywhere, and
          that copy_u_sum gives the same result, bit for bit, on the two
          graphs (the adopted arrays are what the kernels read);
  train   GraphSAGE on mini-batches of ogbn-arxiv
          (examples/minibatch/sage_neighborloader.py: NeighborLoader, or its
          TorchSampler where PyG has no sampling backend), time per step
          split into graph build and compute, losses against PyG's SAGEConv
          on the same batches, and the host build of each batch timed
          beside the device build.

--prepare (here, no GPU needed) compiles the kernels both parts run into
$GOP_CACHE_DIR. Writes OUT/graph_build.json and OUT/train.json."""
import argparse
import importlib.util
import json
import os
import struct
import sys
import tempfile
import time

import numpy as np

import gop
from gop import _lib
from gop._context import _ctx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
F = 32  # copy_u_sum's width in the check


def example():
    path = os.path.join(ROOT, "examples", "minibatch", "sage_neighborloader.py")
    spec = importlib.util.spec_from_file_location("sage_neighborloader", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def prepare():
    before = gop.cache_stats()["compiled"]
    for ei in ([[0, 1, 2], [1, 2, 0]], [[1, 0, 2], [0, 1, 2]]):  # both edge layouts
        g = gop.Graph.from_edge_index(np.array(ei), 3)
        gop.stdlib.copy_u_sum.prepare(g, F=F)
    example().prepare(argparse.Namespace(features=128, hidden=64, classes=16))
    print(f"graph_build: {gop.cache_stats()['compiled'] - before} kernels compiled into "
          f"{gop.cache_dir()}")


def rmat(scale, factor, seed, device):
    """Graph500's R-MAT (a=.57, b=.19, c=.19) edge_index on the device,
    vertex labels permuted; repeats and self-loops kept (both builds take
    them alike)."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    ne = factor << scale
    src = torch.zeros(ne, dtype=torch.int64, device=device)
    dst = torch.zeros(ne, dtype=torch.int64, device=device)
    for bit in range(scale):
        r = torch.rand(ne, generator=gen, device=device)
        src |= (r > 0.76).long() << bit
        dst |= (((r > 0.57) & (r <= 0.76)) | (r > 0.95)).long() << bit
    perm = torch.randperm(1 << scale, generator=gen, device=device)
    return torch.stack([perm[src], perm[dst]]), 1 << scale


_ARRAYS = ("src", "dst", "in_ptr", "in_eid", "in_src", "out_ptr", "out_eid", "out_dst")
_WIDTH = dict(zip(_ARRAYS, (4, 4, 8, 8, 4, 8, 8, 4)))


def host_arrays(g, folder):
    """The host build's arrays (graph/gopg.c's layout: the arrays'
    offsets and sizes from byte 48)."""
    import ctypes
    path = os.path.join(folder, "g.gopg")
    lib = _lib.lib
    lib.gop_graph_write_gopg.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
    if lib.gop_graph_write_gopg(_ctx, g._h, path.encode()) != 0:
        raise gop.GopError(lib.gop_diagnostics(_ctx).decode())
    data = np.fromfile(path, dtype=np.uint8)
    os.unlink(path)
    out = {}
    for i, name in enumerate(_ARRAYS):
        off, n, _ = struct.unpack_from("<QQQ", data, 48 + 24 * i)
        dt = np.int32 if _WIDTH[name] == 4 else np.int64
        out[name] = data[off:off + n].view(dt)
    return out


def sync():
    import torch
    torch.cuda.synchronize()


def build_case(name, ei, nv, full_check, tmp):
    import torch
    row = {"graph": name, "vertices": nv, "edges": int(ei.size(1))}
    times = []
    for _ in range(6):  # the first warms torch's allocator and sort
        sync()
        t = time.perf_counter()
        dg = gop.Graph.from_edge_index(ei, nv)
        sync()
        times.append(time.perf_counter() - t)
        if _ < 5:
            del dg
    row["device_build_ms"] = float(np.median(times[1:]) * 1e3)
    row["device_edges_per_s"] = row["edges"] / (row["device_build_ms"] / 1e3)
    t = time.perf_counter()
    ei_host = ei.cpu()
    row["copy_to_host_ms"] = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    hg = gop.Graph.from_edge_index(ei_host, nv)
    row["host_build_ms"] = (time.perf_counter() - t) * 1e3
    row["host_edges_per_s"] = row["edges"] / (row["host_build_ms"] / 1e3)
    row["speedup"] = row["host_build_ms"] / row["device_build_ms"]
    problems = []
    for k in ("num_vertices", "num_edges", "in_degree_max", "out_degree_max", "isolated",
              "self_loops", "aes", "csr_edges"):
        if dg.info[k] != hg.info[k]:
            problems.append(f"statistic {k}: device {dg.info[k]}, host {hg.info[k]}")
    if abs(dg.info["in_degree_std"] - hg.info["in_degree_std"]) > 1e-9 * max(
            1.0, hg.info["in_degree_std"]):
        problems.append(f"in_degree_std: device {dg.info['in_degree_std']}, "
                        f"host {hg.info['in_degree_std']}")
    if full_check:
        ref = host_arrays(hg, tmp)
        arrays = dg._device[0]
        for k, v in ref.items():
            a = arrays[k].cpu().numpy().astype(v.dtype)
            if not np.array_equal(a, v):
                bad = int(np.argmax(a != v)) if a.shape == v.shape else -1
                problems.append(f"array {k} differs from the host build's (first at {bad})")
        row["arrays_checked"] = True
    # the kernels read the adopted arrays: the same result on both graphs.
    # Small integers as features: every sum is exact, so the order the
    # default mapping's atomics add in does not matter
    gen = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randint(-8, 9, (nv, F), device="cuda", generator=gen).float()
    yd = gop.stdlib.copy_u_sum(dg, x)
    yh = gop.stdlib.copy_u_sum(hg, x)
    sync()
    t = time.perf_counter()
    gop.stdlib.copy_u_sum(dg, x)
    sync()
    row["copy_u_sum_ms"] = (time.perf_counter() - t) * 1e3
    row["copy_u_sum_equal"] = bool(torch.equal(yd, yh))
    if not row["copy_u_sum_equal"]:
        problems.append(f"copy_u_sum differs on the device-built graph: max |diff| "
                        f"{float((yd - yh).abs().max())}")
    row["problems"] = problems
    print(f"{name}: {row['edges']} edges: device build {row['device_build_ms']:.2f} ms "
          f"({row['device_edges_per_s'] / 1e9:.2f} G edges/s), host build "
          f"{row['host_build_ms']:.1f} ms (+ {row['copy_to_host_ms']:.1f} ms copying the edges "
          f"to the host), {row['speedup']:.1f}x; copy_u_sum equal: {row['copy_u_sum_equal']}"
          f"{'; arrays equal' if full_check and not problems else ''}"
          f"{''.join(chr(10) + '  PROBLEM: ' + p for p in problems)}", flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prepare", action="store_true")
    ap.add_argument("--datasets", default=os.path.join(ROOT, "..", "shared", "datasets"))
    ap.add_argument("--out", default=".")
    ap.add_argument("--scales", default="18,20,22")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--skip", default="", help="build, train")
    args = ap.parse_args()
    if args.prepare:
        prepare()
        return 0
    import torch
    if not torch.cuda.is_available() or not gop.gpu_available():
        print(f"graph_build: no GPU ({gop.device_status()})")
        return 1
    torch.cuda.init()
    rc = 0
    if "build" not in args.skip:
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for s in [int(k) for k in args.scales.split(",") if k]:
                ei, nv = rmat(s, 16, s, "cuda")
                rows.append(build_case(f"rmat:{s}:16", ei, nv, ei.size(1) <= 20_000_000, tmp))
                del ei
                torch.cuda.empty_cache()
            arxiv = os.path.join(args.datasets, "ogbn-arxiv.mtx.gz")
            g = gop.Graph.open(arxiv)
            ei = torch.from_numpy(g.edge_index).cuda()
            rows.append(build_case("ogbn-arxiv", ei, g.num_nodes, True, tmp))
        with open(os.path.join(args.out, "graph_build.json"), "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
        if any(r["problems"] for r in rows):
            rc = 1
    if "train" not in args.skip:
        ex = example()
        out = os.path.join(args.out, "train.json")
        ex.main(["--graph", os.path.join(args.datasets, "ogbn-arxiv.mtx.gz"), "--device", "cuda",
                 "--steps", str(args.steps), "--batch-size", "1024", "--fanout", "10,10",
                 "--check", "--host-build", "--json", out])
        with open(out) as f:
            s = json.load(f)["summary"]
        if s["max_loss_diff"] > 1e-3:
            print(f"PROBLEM: the losses differ from PyG's by up to {s['max_loss_diff']:.2e}")
            rc = 1
        if s["kernels_compiled"]:
            print(f"PROBLEM: {s['kernels_compiled']} kernels compiled during training")
            rc = 1
    print(f"graph_build rc={rc}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
