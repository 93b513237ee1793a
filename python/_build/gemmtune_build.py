"""The package's PEP 517 build backend (in tree, standard library only).

`pip install --no-build-isolation ./python` needs nothing but pip: no
setuptools or wheel in the environment (a PyTorch environment may have an
old setuptools without bdist_wheel). The wheel holds the gemmtune package
and, when the project's CMake build is found, a copy of its
libgemmtune.so.0 as gemmtune/_lib/libgemmtune.so.0 (what the package loads
when GEMMTUNE_LIB is not set): $GEMMTUNE_BUILD_DIR/lib/ (a relative path is
taken from the folder pip was run in, else the repository root; named but
holding no library, the build fails saying where it looked), else ../build/lib/
next to this folder. Without one the wheel is built without a copy and says
so on stderr. Where that build also made libgemmtune_cutlass.so (CUDA builds
with the nvidia-cutlass headers: the "cutlass" family's kernels, which
libgemmtune opens from its own folder), it goes beside it in gemmtune/_lib/.

With torch importable in the build's environment (pip's
--no-build-isolation), the wheel also holds the native fast path of
gemmtune.torch.use: csrc/gemmtune_torch.cpp compiled against that torch
(its headers and libraries from torch.utils.cpp_extension, its C++ ABI flag,
$CXX or c++/g++ from PATH) as gemmtune/_lib/libgemmtune_torch.so, with the
torch version in gemmtune/_lib/TORCH_EXT. It is optional: without torch, a
compiler, a CUDA torch (or, for torch without c10::Stream::native_handle,
the CUDA runtime headers), or with GEMMTUNE_BUILD_TORCH_EXT=0, the wheel is
built without it and says why on stderr once.
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile

NAME = "gemmtune"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, NAME)
SONAME = "libgemmtune.so.0"
CUTLASS_LIB = "libgemmtune_cutlass.so"
EXT_NAME = "libgemmtune_torch.so"
EXT_SRC = os.path.join(ROOT, "csrc", "gemmtune_torch.cpp")
SUMMARY = "Python layer over gemmtune: coordinator client, libgemmtune lookups, PyTorch GEMM recording and routing"


def _version():
    with open(os.path.join(PKG, "__init__.py")) as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def _built_lib():
    env = os.environ.get("GEMMTUNE_BUILD_DIR")
    if not env:
        dirs = [os.path.join(ROOT, "..", "build")]
    elif os.path.isabs(env):
        dirs = [env]
    else:
        # pip runs this backend in the package's folder, not where the user
        # typed `GEMMTUNE_BUILD_DIR=build pip install ./python`: a relative
        # path means the shell's folder ($PWD), else the repository root.
        dirs = [os.path.join(b, env) for b in (os.environ.get("PWD"), os.path.join(ROOT, "..")) if b]
    for d in dirs:
        for p in (os.path.join(d, "lib", SONAME), os.path.join(d, SONAME)):
            if os.path.exists(p):
                return os.path.realpath(p)
    if env:
        raise RuntimeError(
            f"GEMMTUNE_BUILD_DIR={env}: no lib/{SONAME} in " + ", ".join(os.path.abspath(d) for d in dirs)
            + " (build the project first: cmake -S . -B build && cmake --build build)"
        )
    return None


def _cutlass_lib(lib):
    """libgemmtune_cutlass.so of the build that made lib: beside it (a bundle's lib/) or in
    the build folder above its lib/; None where that build has none."""
    here = os.path.dirname(lib)
    for d in (here, os.path.dirname(here)):
        p = os.path.join(d, CUTLASS_LIB)
        if os.path.exists(p):
            return os.path.realpath(p)
    return None


def _cuda_headers(torch_dir):
    """A folder holding cuda_runtime_api.h: CUDA_HOME/CUDA_PATH, the nvidia
    pip wheels next to torch, the usual system places; None if none."""
    cands = [os.path.join(os.environ[v], "include") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    nv = os.path.join(os.path.dirname(torch_dir), "nvidia")
    if os.path.isdir(nv):
        cands += sorted(os.path.join(nv, d, "include") for d in os.listdir(nv))
    cands += ["/usr/local/cuda/include", "/usr/include", "/usr/local/include"]
    for c in cands:
        if os.path.exists(os.path.join(c, "cuda_runtime_api.h")):
            return c
    return None


def build_torch_ext(out_dir):
    """Compiles the torch extension against this interpreter's torch into
    out_dir. Returns (path, torch version, seconds, None), or (None, None,
    None, why) when it cannot be built here."""
    if os.environ.get("GEMMTUNE_BUILD_TORCH_EXT") == "0":
        return None, None, None, "GEMMTUNE_BUILD_TORCH_EXT=0"
    try:
        import torch
        from torch.utils import cpp_extension
    except Exception as e:  # no torch, or a broken one: the package works without the extension
        return None, None, None, f"no importable torch in this environment ({type(e).__name__}: {e}); " \
            "install with --no-build-isolation into the environment that has torch"
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not cxx:
        return None, None, None, "no C++ compiler ($CXX, c++ or g++)"
    torch_dir = os.path.dirname(torch.__file__)
    incs = cpp_extension.include_paths()
    libs = cpp_extension.library_paths()
    if not any(os.path.exists(os.path.join(d, "libtorch_cuda.so")) for d in libs):
        return None, None, None, f"torch {torch.__version__} is not a CUDA build (no libtorch_cuda.so)"
    inc = incs[0]
    if not os.path.exists(os.path.join(inc, "ATen", "ops", "mm_cuda_dispatch.h")):
        return None, None, None, f"torch {torch.__version__} has no ATen/ops/mm_cuda_dispatch.h in {inc}"
    flags = []
    with open(os.path.join(inc, "c10", "core", "Stream.h")) as f:
        native_handle = "native_handle" in f.read()
    if not native_handle:  # torch 2.4: the stream comes from c10/cuda, which includes the CUDA runtime's header
        cu = _cuda_headers(torch_dir)
        if cu is None:
            return None, None, None, f"torch {torch.__version__} needs the CUDA runtime headers " \
                "(cuda_runtime_api.h: set CUDA_HOME)"
        flags += ["-DGTN_C10_CUDA_STREAM", "-isystem", cu]
    with open(os.path.join(inc, "ATen", "ATen.h")) as f:
        std = "c++20" if "C++20" in f.read() else "c++17"
    abi = int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))
    out = os.path.join(out_dir, EXT_NAME)
    cmd = [cxx, f"-std={std}", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", f"-D_GLIBCXX_USE_CXX11_ABI={abi}"]
    for i in incs:
        cmd += ["-isystem", i]
    cmd += flags + [EXT_SRC, "-o", out]
    cmd += [f"-L{d}" for d in libs] + ["-lc10", "-ltorch_cpu", "-ltorch_cuda"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    secs = time.monotonic() - t0
    if p.returncode != 0:
        tail = "\n".join(p.stdout.strip().splitlines()[-15:])
        return None, None, None, f"{' '.join(cmd)} failed ({p.returncode}):\n{tail}"
    return out, torch.__version__, secs, None


def _metadata(version):
    readme = os.path.join(ROOT, "README.md")
    body = open(readme).read() if os.path.exists(readme) else ""
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {version}\n"
        f"Summary: {SUMMARY}\n"
        "Requires-Python: >=3.9\n"
        "Provides-Extra: torch\n"
        "Requires-Dist: torch>=2.4; extra == \"torch\"\n"
        "Provides-Extra: test\n"
        "Requires-Dist: pytest>=7; extra == \"test\"\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + body
    )


def _tag(lib):
    if not lib:
        return "py3-none-any", "true"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{plat}", "false"


def _package_files():
    for d, dirs, files in os.walk(PKG):
        dirs[:] = sorted(x for x in dirs if x not in ("__pycache__", "_lib"))
        for f in sorted(files):
            if f.endswith(".py"):
                full = os.path.join(d, f)
                yield full, os.path.relpath(full, ROOT)


class _Wheel:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, arcname, data, mode=0o644):
        if isinstance(data, str):
            data = data.encode()
        info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append(f"{arcname},sha256={digest},{len(data)}")

    def close(self, record_name):
        self.record.append(f"{record_name},,")
        self.zip.writestr(zipfile.ZipInfo(record_name, date_time=(2020, 1, 1, 0, 0, 0)), "\n".join(self.record) + "\n")
        self.zip.close()


def _dist_info(w, version, tag, purelib):
    di = f"{NAME}-{version}.dist-info"
    w.add(f"{di}/METADATA", _metadata(version))
    w.add(f"{di}/WHEEL", f"Wheel-Version: 1.0\nGenerator: gemmtune_build\nRoot-Is-Purelib: {purelib}\nTag: {tag}\n")
    w.add(f"{di}/top_level.txt", f"{NAME}\n")
    return f"{di}/RECORD"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    lib = _built_lib()
    tmp = tempfile.mkdtemp(prefix="gemmtune-ext-")
    try:
        return _build_wheel(wheel_directory, version, lib, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build_wheel(wheel_directory, version, lib, tmp):
    ext, torch_version, secs, why = build_torch_ext(tmp)
    tag, purelib = _tag(lib or ext)
    name = f"{NAME}-{version}-{tag}.whl"
    w = _Wheel(os.path.join(wheel_directory, name))
    for full, arc in _package_files():
        with open(full, "rb") as f:
            w.add(arc, f.read())
    if lib is not None:
        with open(lib, "rb") as f:
            w.add(f"{NAME}/_lib/{SONAME}", f.read(), mode=0o755)
        w.add(f"{NAME}/_lib/SOURCE", lib + "\n")
        sys.stderr.write(f"gemmtune: bundled {lib}\n")
        cut = _cutlass_lib(lib)
        if cut is not None:
            with open(cut, "rb") as f:
                w.add(f"{NAME}/_lib/{CUTLASS_LIB}", f.read(), mode=0o755)
            sys.stderr.write(f"gemmtune: bundled {cut} (the cutlass family's kernels)\n")
    else:
        sys.stderr.write(
            "gemmtune: WARNING: no libgemmtune found to bundle (set GEMMTUNE_BUILD_DIR to the CMake build "
            "folder); the package will look for GEMMTUNE_LIB or a system libgemmtune\n"
        )
    if ext is not None:
        with open(ext, "rb") as f:
            w.add(f"{NAME}/_lib/{EXT_NAME}", f.read(), mode=0o755)
        w.add(f"{NAME}/_lib/TORCH_EXT", torch_version + "\n")
        sys.stderr.write(f"gemmtune: torch extension: built for torch {torch_version} in {secs:.1f} s "
                         "(the native path of gemmtune.torch.use)\n")
    else:
        sys.stderr.write(f"gemmtune: torch extension: not built: {why}; gemmtune.torch.use routes "
                         "through its Python router (gemmtune.torch.native_status() says so)\n")
    w.close(_dist_info(w, version, tag, purelib))
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable install: a .pth file putting this folder on sys.path
    (no bundled library: set GEMMTUNE_LIB or install libgemmtune)."""
    version = _version()
    name = f"{NAME}-{version}-py3-none-any.whl"
    w = _Wheel(os.path.join(wheel_directory, name))
    w.add(f"__editable__.{NAME}.pth", ROOT + "\n")
    w.close(_dist_info(w, version, "py3-none-any", "true"))
    return name


def build_sdist(sdist_directory, config_settings=None):
    import tarfile

    version = _version()
    base = f"{NAME}-{version}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ("pyproject.toml", "README.md", "_build/gemmtune_build.py", "csrc/gemmtune_torch.cpp"):
            t.add(os.path.join(ROOT, rel), f"{base}/{rel}")
        for full, arc in _package_files():
            t.add(full, f"{base}/{arc}")
        info = _metadata(version).encode()
        import io

        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(info)
        t.addfile(ti, io.BytesIO(info))
    return name
