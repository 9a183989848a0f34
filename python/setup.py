"""Builds the gop package with its libgop.so inside (README.md):

  pip wheel ./python     # a self-contained wheel: libgop.so built here with
  pip install ./python   # -DGOP_STATIC=ON in build-wheel/ (LLVM's NVPTX
                         # backend, SQLite, zlib, zstd and libstdc++ linked
                         # in: it needs glibc only), stripped
  GOP_LIBRARY=/path/libgop.so pip install ./python   # that library instead

GOP_WHEEL_BUILD_DIR names another build folder (default: the repository's
build-wheel/); GOP_BUILD_JOBS the build's parallel jobs (default: the
machine's cores). GOP_NO_LIBRARY=1 installs the Python files only: gop then
loads the libgop.so.0 the dynamic loader finds (an installed gop: cmake
--install). The wheel's tag is py3-none-linux_<arch>: any Python 3 (the
package is ctypes, no extension module), this platform; docs/python-package.md
says what it needs of the system and why it is not tagged manylinux.
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:  # setuptools >= 70.1 carries bdist_wheel; before, the wheel package does
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# What a wheel's libgop.so may need at run time: glibc's own libraries
# (libcuda is opened with dlopen when a GPU is used, never linked).
GLIBC = ("libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
         "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1")


def build_static():
    """Builds the self-contained libgop.so (cmake -DGOP_STATIC=ON) and
    returns its path; an up-to-date build folder is only re-checked."""
    if not os.path.exists(os.path.join(REPO, "CMakeLists.txt")):
        raise SystemExit("gop: no libgop.so to package: set GOP_LIBRARY, or build from the "
                         "repository (pip install ./python)")
    out = os.environ.get("GOP_WHEEL_BUILD_DIR") or os.path.join(REPO, "build-wheel")
    configure = ["cmake", "-S", REPO, "-B", out, "-DGOP_STATIC=ON",
                 "-DCMAKE_BUILD_TYPE=Release"]
    # the generator can be chosen only when the folder is new
    if shutil.which("ninja") and not os.path.exists(os.path.join(out, "CMakeCache.txt")):
        configure += ["-G", "Ninja"]
    subprocess.check_call(configure)
    jobs = os.environ.get("GOP_BUILD_JOBS") or str(os.cpu_count() or 1)
    subprocess.check_call(["cmake", "--build", out, "--target", "gop_shared",
                           "--parallel", jobs])
    return os.path.join(out, "libgop.so")


def needed(path):
    """The shared libraries `path` names as NEEDED (readelf), or None
    without binutils."""
    if not shutil.which("readelf"):
        return None
    text = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    return [line.split("[", 1)[1].split("]", 1)[0] for line in text.splitlines()
            if "(NEEDED)" in line]


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        if os.environ.get("GOP_NO_LIBRARY"):
            return
        given = os.environ.get("GOP_LIBRARY")
        if given and not os.path.isabs(given) and not os.path.exists(given):
            # pip runs this from python/: a relative path is the repository's
            given = os.path.join(REPO, given)
        if given and not os.path.exists(given):
            raise SystemExit(f"GOP_LIBRARY={os.environ['GOP_LIBRARY']}: no such file "
                             "(give an absolute path)")
        src = os.path.realpath(given or build_static())
        dst = os.path.join(self.build_lib, "gop", "libgop.so")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        # stripped: the symbols of LLVM's archives are most of an unstripped
        # library; the build folder keeps them for debugging
        if shutil.which("strip"):
            subprocess.check_call(["strip", "--strip-unneeded", "-o", dst, src])
        else:
            shutil.copyfile(src, dst)
        deps = needed(dst)
        others = [d for d in deps or [] if d not in GLIBC]
        print(f"gop: packaged {src} ({os.path.getsize(dst) / 1e6:.1f} MB"
              f"{', needs ' + ', '.join(deps) if deps else ''})")
        if others:
            print(f"gop: warning: this libgop.so needs {', '.join(others)}: the package "
                  "works only where they are installed (a self-contained build: "
                  "pip install ./python without GOP_LIBRARY)")


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        # ctypes, no extension module: any Python 3, no ABI; the platform is
        # libgop.so's
        return "py3", "none", super().get_tag()[2]


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True  # a platform wheel: it carries libgop.so


setup(cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": PlatformWheel},
      distclass=BinaryDistribution)
