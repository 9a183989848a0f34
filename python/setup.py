"""Installs the gop package with its libgop.so inside (see README.md):

  GOP_LIBRARY=/path/libgop.so pip install ./python   # that library
  pip install ./python                               # the repository's build/
                                                     # (or build-*/), else a
                                                     # fresh cmake build

GOP_NO_LIBRARY=1 installs the Python files only: gop then loads the
libgop.so.0 the dynamic loader finds (an installed gop: cmake --install).
"""
import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def find_or_build():
    env = os.environ.get("GOP_LIBRARY")
    if env:
        if not os.path.exists(env):
            raise SystemExit(f"GOP_LIBRARY={env}: no such file")
        return env
    for d in ["build"] + sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO, "build*"))):
        p = os.path.join(REPO, d, "libgop.so")
        if os.path.exists(p):
            return p
    if not os.path.exists(os.path.join(REPO, "CMakeLists.txt")):
        raise SystemExit("gop: no libgop.so found: set GOP_LIBRARY, or install from the "
                         "repository (pip install ./python)")
    out = os.path.join(REPO, "build-python")
    subprocess.check_call(["cmake", "-S", REPO, "-B", out, "-DCMAKE_BUILD_TYPE=Release"])
    subprocess.check_call(["cmake", "--build", out, "--target", "gop_shared"])
    return os.path.join(out, "libgop.so")


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        if os.environ.get("GOP_NO_LIBRARY"):
            return
        src = os.path.realpath(find_or_build())
        dst = os.path.join(self.build_lib, "gop", "libgop.so")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)
        print(f"gop: packaged {src}")


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True  # a platform wheel: it carries libgop.so


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
