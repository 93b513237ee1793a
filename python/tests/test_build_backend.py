"""The package's build backend finds the CMake build to bundle libgemmtune
from as README's install line names it: `GEMMTUNE_BUILD_DIR=build pip
install --no-build-isolation ./python`, run from the repository root, while
pip runs the backend in python/ (a relative path once matched nothing and
the wheel silently held no library)."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BACKEND = os.path.join(os.path.dirname(HERE), "_build", "gemmtune_build.py")


def backend():
    spec = importlib.util.spec_from_file_location("gemmtune_build", BACKEND)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_relative_build_dir_is_taken_from_the_shell_folder(build_dir, tmp_path, monkeypatch):
    want = os.path.realpath(os.path.join(build_dir, "lib", "libgemmtune.so.0"))
    if not os.path.exists(want):
        pytest.skip(f"{build_dir} has no lib/libgemmtune.so.0")
    parent = os.path.dirname(build_dir)
    monkeypatch.chdir(tmp_path)  # where pip runs the backend, not the user's folder
    monkeypatch.setenv("PWD", parent)
    monkeypatch.setenv("GEMMTUNE_BUILD_DIR", os.path.basename(build_dir))
    assert backend()._built_lib() == want
    monkeypatch.setenv("GEMMTUNE_BUILD_DIR", build_dir)  # absolute, as before
    assert backend()._built_lib() == want


def test_a_named_build_dir_without_the_library_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PWD", str(tmp_path))
    monkeypatch.setenv("GEMMTUNE_BUILD_DIR", "no-such-build")
    with pytest.raises(RuntimeError, match="GEMMTUNE_BUILD_DIR=no-such-build: no lib/libgemmtune.so.0"):
        backend()._built_lib()
