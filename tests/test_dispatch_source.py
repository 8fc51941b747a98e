"""The compiled dispatcher's source compiles against the installed torch headers (syntax only: a
CPU build of torch has no CUDA libraries to link; the GPU tests build and run it)."""

import subprocess

import pytest

from cudal2.library import dispatch


def test_the_dispatcher_source_compiles_against_torch(tmp_path):
    pytest.importorskip("torch")
    r = subprocess.run(dispatch.compile_command(tmp_path / "x.so", syntax_only=True), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]


def test_its_argument_kinds_match_the_source():
    src = dispatch.SOURCE.read_text()
    enum = src[src.index("enum Kind"):src.index("};", src.index("enum Kind"))]
    names = [w.strip().split()[0] for w in enum.split("{")[1].split(",")]
    assert names == ["ARG_A", "ARG_B", "ARG_C", "ARG_WS", "ARG_M", "ARG_N", "ARG_K", "ARG_INT", "ARG_TMAP"]
    assert list(dispatch.KINDS.values()) == list(range(len(names)))
