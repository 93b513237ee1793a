"""Finding and loading libgemmtune (the project's C library) through ctypes.

Search order, first hit wins:

1. ``GEMMTUNE_LIB``: the path of a libgemmtune.so (or of the folder holding it);
2. the copy bundled into this package at build time (``gemmtune/_lib/``, taken
   from the CMake build folder ``GEMMTUNE_BUILD_DIR`` or ``../build`` when
   ``pip install ./python`` ran);
3. the system library path (``libgemmtune.so.0``, e.g. after
   ``cmake --install build``).

Nothing is loaded at import time: ``gemmtune.client`` works without the
library. Every C declaration used by the package is here, once.
"""

import ctypes
import os
import threading

__all__ = ["LibraryNotFound", "load", "path", "has", "address"]

_SONAME = "libgemmtune.so.0"
_HERE = os.path.dirname(os.path.abspath(__file__))
_BUNDLED = os.path.join(_HERE, "_lib", _SONAME)

_lock = threading.Lock()
_lib = None
_path = None


class LibraryNotFound(ImportError):
    """libgemmtune could not be loaded from any of the places searched."""


class GemmDescC(ctypes.Structure):
    """gt_gemm_desc of gemmtune.h."""

    _fields_ = [
        ("m", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("batch", ctypes.c_int64),
        ("transa", ctypes.c_char),
        ("transb", ctypes.c_char),
        ("lda", ctypes.c_int64),
        ("ldb", ctypes.c_int64),
        ("ldc", ctypes.c_int64),
        ("ldd", ctypes.c_int64),
        ("stride_a", ctypes.c_int64),
        ("stride_b", ctypes.c_int64),
        ("stride_c", ctypes.c_int64),
        ("stride_d", ctypes.c_int64),
        ("a_type", ctypes.c_char_p),
        ("b_type", ctypes.c_char_p),
        ("c_type", ctypes.c_char_p),
        ("d_type", ctypes.c_char_p),
        ("compute_type", ctypes.c_char_p),
        ("scale_type", ctypes.c_char_p),
        ("alpha", ctypes.c_double),
        ("beta", ctypes.c_double),
        ("bias", ctypes.c_int),
        ("bias_type", ctypes.c_char_p),
        ("activation", ctypes.c_char_p),
    ]


class ResultC(ctypes.Structure):
    """gt_db_result of gemmtune.h."""

    _fields_ = [
        ("backend", ctypes.c_char_p),
        ("device_model", ctypes.c_char_p),
        ("key", ctypes.c_char_p),
        ("config", ctypes.c_char_p),
        ("time_us", ctypes.c_double),
        ("baseline_us", ctypes.c_double),
        ("uplift", ctypes.c_double),
    ]


class LaunchC(ctypes.Structure):
    """gt_db_launch of gemmtune.h."""

    _fields_ = [
        ("kernel", ctypes.c_char_p),
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("shared_bytes", ctypes.c_size_t),
        ("extra_param", ctypes.c_char_p),
        ("extra_value", ctypes.c_longlong),
    ]


class KernelC(ctypes.Structure):
    """gt_db_kernel of gemmtune.h."""

    _fields_ = [
        ("family", ctypes.c_char_p),
        ("key", ctypes.c_char_p),
        ("device_model", ctypes.c_char_p),
        ("config", ctypes.c_char_p),
        ("time_us", ctypes.c_double),
        ("baseline_us", ctypes.c_double),
        ("uplift", ctypes.c_double),
        ("source", ctypes.c_char_p),
        ("program_name", ctypes.c_char_p),
        ("options", ctypes.POINTER(ctypes.c_char_p)),
        ("noptions", ctypes.c_int),
        ("min_sm", ctypes.c_int),
        ("nlaunch", ctypes.c_int),
        ("launch", LaunchC * 2),
        ("args_bytes", ctypes.c_size_t),
        ("workspace_bytes", ctypes.c_size_t),
        ("workspace_zero", ctypes.c_int),
        ("arch_specific", ctypes.c_int),
        ("tensor_maps", ctypes.c_int),
        ("chain_min_sm", ctypes.c_int),
        ("chain_reads_a", ctypes.c_int),
    ]


class ModuleC(ctypes.Structure):
    """gt_db_module of gemmtune.h (CUDA builds)."""

    _fields_ = [
        ("module", ctypes.c_void_p),
        ("function", ctypes.c_void_p * 2),
        ("nfunction", ctypes.c_int),
        ("target", ctypes.c_char * 24),
    ]


_P = ctypes.POINTER
_VP = ctypes.c_void_p
_CP = ctypes.c_char_p
_SZ = ctypes.c_size_t

# name: (restype, argtypes, required). Optional ones exist only in some builds
# (CUDA) or releases of the library; has() tells.
_DECLS = {
    "gt_db_open": (_VP, [_CP, _CP, _SZ], True),
    "gt_db_close": (None, [_VP], True),
    "gt_db_size": (_SZ, [_VP], True),
    "gt_gemm_desc_init": (None, [_P(GemmDescC), ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, _CP], True),
    "gt_db_key": (ctypes.c_int, [_P(GemmDescC), _CP, _SZ, _CP, _SZ], True),
    "gt_db_lookup": (ctypes.c_int, [_VP, _P(GemmDescC), _CP, _CP, _P(ResultC)], True),
    "gt_db_lookup_key": (ctypes.c_int, [_VP, _CP, _CP, _CP, _P(ResultC)], True),
    "gt_db_strerror": (_CP, [ctypes.c_int], True),
    "gt_db_kernel_get": (ctypes.c_int, [_VP, _P(GemmDescC), _CP, _P(_P(KernelC))], True),
    "gt_db_kernel_free": (None, [_P(KernelC)], True),
    "gt_db_record_line": (ctypes.c_int, [_P(GemmDescC), ctypes.c_int64, _CP, _SZ, _CP, _SZ], False),
    "gt_db_kernel_cuda_load": (ctypes.c_int, [_P(KernelC), _P(ModuleC), _CP, _SZ], False),
    "gt_db_kernel_cuda_unload": (None, [_P(ModuleC)], False),
    "gt_db_kernel_cuda_launch_ex": (
        ctypes.c_int,
        [_P(KernelC), _P(ModuleC), _VP, _VP, _VP, _VP, _VP, _VP, _VP, ctypes.c_uint, _CP, _SZ],
        False,
    ),
    # plans (gemmtune.h): every build defines them; without CUDA they say so
    "gt_db_plan_create": (ctypes.c_int, [_VP, _P(GemmDescC), _CP, _P(_VP), _CP, _SZ], False),
    "gt_db_cuda_bind_device": (ctypes.c_int, [ctypes.c_int, _CP, _SZ], False),
    "gt_db_plan_workspace": (None, [_VP, _P(_SZ), _P(ctypes.c_int)], False),
    "gt_db_plan_run": (ctypes.c_int, [_VP] * 11 + [ctypes.c_int, _CP, _SZ], False),
    "gt_db_plan_free": (None, [_VP], False),
}


def _candidates():
    env = os.environ.get("GEMMTUNE_LIB")
    if env:
        yield "GEMMTUNE_LIB", os.path.join(env, _SONAME) if os.path.isdir(env) else env
        return  # an explicit choice is never silently replaced by another library
    yield "bundled", _BUNDLED
    yield "system", _SONAME


def _declare(lib):
    for name, (res, args, required) in _DECLS.items():
        fn = getattr(lib, name, None)
        if fn is None:
            if required:
                raise LibraryNotFound(f"{lib._name}: no {name}: not a libgemmtune this package can use")
            continue
        fn.restype = res
        fn.argtypes = args


def load():
    """The loaded library (a ctypes.CDLL), loading it at the first call."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for where, cand in _candidates():
            if where == "bundled" and not os.path.exists(cand):
                tried.append(f"{where}: {cand} (not built into this install)")
                continue
            try:
                lib = ctypes.CDLL(cand)
            except OSError as e:
                tried.append(f"{where}: {e}")
                continue
            _declare(lib)
            _lib, _path = lib, cand
            return lib
        raise LibraryNotFound(
            "libgemmtune could not be loaded. Tried:\n  "
            + "\n  ".join(tried)
            + "\nBuild it (cmake -S . -B build && cmake --build build) and either set "
            "GEMMTUNE_LIB=build/lib/libgemmtune.so, reinstall the package with "
            "GEMMTUNE_BUILD_DIR=build so that it bundles a copy, or install it "
            "(cmake --install build). A CUDA build also needs libcublasLt and libnvrtc "
            "of its CUDA major version on the library path (PyTorch's CUDA wheels "
            "bring them: import torch first)."
        )


def path():
    """The file the library was loaded from (loads it)."""
    load()
    return _path


def has(name):
    """Whether the loaded library defines the optional function name."""
    return getattr(load(), name, None) is not None and name in _DECLS


def address(name):
    """The address of libgemmtune's function `name` in the loaded library
    (for native code that must call the same copy the package uses)."""
    return ctypes.cast(getattr(load(), name), ctypes.c_void_p).value
