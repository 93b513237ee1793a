"""Importing the package, and how it finds libgemmtune."""

import os
import subprocess
import sys

import pytest

import gemmtune
from gemmtune import _lib


def py(code, **env):
    e = dict(os.environ)
    for k, v in env.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)


def test_import_needs_neither_torch_nor_the_library():
    r = py(
        "import sys, gemmtune, gemmtune.client\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "assert gemmtune._lib._lib is None, 'library loaded at import'\n"
        "print(gemmtune.__version__)"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == gemmtune.__version__


def test_library_loads_and_declares_the_api():
    p = gemmtune.library_path()
    assert os.path.exists(p) or p == _lib._SONAME
    for fn in ("gt_db_open", "gt_db_lookup", "gt_db_key", "gt_db_kernel_get", "gt_db_record_line"):
        assert _lib.has(fn), fn


def test_a_key_from_the_library():
    d = gemmtune.GemmDesc(m=6144, n=1, k=4096, a_type="bf16", transa="T", lda=4096)
    assert d.key() == (
        "m=6144,n=1,k=4096,b=1,op=TN,ld=4096/4096/6144/6144,st=0/0/0/0,t=bf16/bf16/bf16/bf16,"
        "ct=f32,st=f32,ab=1/0,bias=0:-,act=none"
    )
    line = d.record_line(7)
    assert line.startswith("- {function: matmul, M: 6144, N: 1, K: 4096, lda: 4096,") and "call_count: 7}" in line
    with pytest.raises(ValueError, match="a_type"):
        gemmtune.GemmDesc(m=4, n=4, k=4, a_type="complex64").key()
    with pytest.raises(ValueError, match="FNUZ"):
        gemmtune.GemmDesc(m=16, n=16, k=16, a_type="f8e4m3fnuz", d_type="bf16").record_line()


def test_missing_library_says_what_to_do(tmp_path):
    r = py("import gemmtune; gemmtune.library_path()", GEMMTUNE_LIB=str(tmp_path / "nope.so"))
    assert r.returncode != 0
    assert "LibraryNotFound" in r.stderr and "GEMMTUNE_LIB" in r.stderr and "GEMMTUNE_BUILD_DIR" in r.stderr


def test_gemmtune_lib_may_name_a_folder():
    real = os.path.realpath(gemmtune.library_path())
    folder = os.path.dirname(real)
    if not os.path.exists(os.path.join(folder, _lib._SONAME)):
        pytest.skip(f"{folder} holds no {_lib._SONAME}")
    r = py("import gemmtune; print(gemmtune.library_path())", GEMMTUNE_LIB=folder)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == os.path.join(folder, _lib._SONAME)


def test_bundled_copy_is_used_without_gemmtune_lib():
    if not os.path.exists(_lib._BUNDLED):
        pytest.skip("this install has no bundled libgemmtune (built without GEMMTUNE_BUILD_DIR or ../build)")
    r = py("import gemmtune; print(gemmtune.library_path())", GEMMTUNE_LIB=None)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == _lib._BUNDLED


def test_torch_part_registers_its_operators():
    torch = pytest.importorskip("torch")
    import gemmtune.torch as gt

    assert {"record", "use", "disable"} <= set(gt.__all__)
    for name in ("linear", "matmul", "mm", "bmm", "addmm", "baddbmm"):
        op = getattr(torch.ops.gemmtune, name).default
        assert op._schema.name == f"gemmtune::{name}"
