"""tests/install/wheel_check.py PTX_OUT: run by tests/install/wheel.sh with
the Python of a fresh virtual environment that has the gop wheel installed.

Imports gop from that environment, compiles stdlib copy_u_sum to PTX for
sm_80 (gop's kernel cache: `prepare` without a GPU fills it), writes the PTX
to PTX_OUT for ptxas, and proves from /proc/self/maps that the process
loaded the wheel's libgop.so and no other library for it: no LLVM (the
machine's libLLVM-16 stays installed and on the loader's path), no
libstdc++, libtinfo, SQLite or zstd. Prints one line per check; exits 1 on
the first failure.
"""
import os
import subprocess
import sys
import sysconfig


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def mapped():
    """The files this process has mapped that look like shared objects."""
    with open("/proc/self/maps") as f:
        return {line.split(None, 5)[5].strip() for line in f
                if len(line.split(None, 5)) == 6 and ".so" in line}


# What this process maps before gop: the interpreter's own modules and
# NumPy's libraries (gop imports NumPy and ctypes), so that what import and
# compile add afterwards is gop's alone.
import ctypes  # noqa: E402,F401
import numpy as np  # noqa: E402

before = mapped()

import gop  # noqa: E402

site = sysconfig.get_paths()["purelib"]
if not os.path.realpath(gop.__file__).startswith(os.path.realpath(site)):
    fail(f"gop imported from {gop.__file__}, not from the environment's {site}")
if os.path.dirname(os.path.realpath(gop.library_path)) != \
        os.path.dirname(os.path.realpath(gop.__file__)):
    fail(f"libgop.so loaded from {gop.library_path}, not from the wheel")
print(f"ok: gop {gop.__version__} and its libgop.so from {os.path.dirname(gop.__file__)}")

# libcuda is opened at run time only: here (CI) there is none, and gop says so
code, why = gop.device_status()
print(f"ok: device status {code}: {why}")

src = np.array([0, 1, 2, 3, 0], dtype=np.int32)
dst = np.array([1, 2, 3, 0, 2], dtype=np.int32)
g = gop.Graph.from_arcs(src, dst, 4)
op = gop.stdlib.copy_u_sum
op.prepare(g, target="sm_80", F=16)
stats = gop.cache_stats()
if stats["compiled"] < 1:
    fail(f"copy_u_sum was not compiled: {stats}")
packs = [os.path.join(gop.cache_dir(), n) for n in os.listdir(gop.cache_dir())
         if n.startswith("copy_u_sum-")]
if not packs:
    fail(f"no copy_u_sum pack in {gop.cache_dir()}")
# a kernel pack is text lines, then "ptx N" and N bytes of PTX
blob = open(packs[0], "rb").read()
at = blob.find(b"\nptx ")
if at < 0:
    fail(f"{packs[0]}: no PTX in the pack")
size_end = blob.index(b"\n", at + 1)
n = int(blob[at + 5:size_end])
ptx = blob[size_end + 1:size_end + 1 + n]
if b".target sm_80" not in ptx or b".entry" not in ptx:
    fail("the pack's PTX has no sm_80 kernel entry")
with open(sys.argv[1], "wb") as f:
    f.write(ptx)
print(f"ok: copy_u_sum compiled to PTX for sm_80 ({n} bytes)")

after = mapped()
foreign = sorted(p for p in after
                 if any(k in os.path.basename(p).lower() for k in
                        ("llvm", "libstdc++", "libtinfo", "libsqlite", "libzstd")))
if foreign:
    fail("the process maps libraries the wheel should have inside: " + ", ".join(foreign))
added = sorted(after - before)
ours = os.path.realpath(gop.library_path)
# gop's Python may import more of the interpreter's extension modules (bz2,
# lzma), which bring their own libraries; anything else added is a library
# libgop.so pulled in
ext = [p for p in added if p.endswith(sysconfig.get_config_var("EXT_SUFFIX"))]
theirs = set()
for p in ext:
    out = subprocess.run(["ldd", p], capture_output=True, text=True).stdout
    theirs |= {os.path.realpath(w) for w in out.split() if w.startswith("/")}
others = [p for p in added if os.path.realpath(p) != ours and p not in ext and
          os.path.realpath(p) not in theirs]
if others:
    fail("importing gop and compiling loaded more than libgop.so: " + ", ".join(others))
print(f"ok: the process loaded {os.path.basename(ours)} and nothing else for gop "
      f"(no LLVM, libstdc++, libtinfo, SQLite or zstd mapped)")
