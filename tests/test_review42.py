"""Review 42: the library's compiled dispatcher, its manifest, and what `cudal2 sass` publishes.
Each test is one adversarial property; each failed on the code before the review."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


# --- the compiled dispatcher: its table is keyed by the whole shape -------------------------------

@pytest.fixture(scope="module")
def dispatcher_env(tmp_path_factory):
    """The dispatcher built against the installed torch (CPU build) in a private cache, and a stub
    libcuda.so.1 (cuLaunchKernelEx and cuTensorMapEncodeTiled that succeed) so that add_kernel and
    launch_ptrs run with no GPU: the environment for a subprocess that drives the table."""
    pytest.importorskip("torch")
    if shutil.which("gcc") is None:
        pytest.skip("no C compiler for the stub driver")
    base = tmp_path_factory.mktemp("dispatch42")
    stub = base / "stub"
    stub.mkdir()
    (stub / "stub.c").write_text("int cuLaunchKernelEx(const void* c, void* f, void** p, void** e) { return 0; }\n"
                                 "int cuTensorMapEncodeTiled(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(stub / "libcuda.so.1"), str(stub / "stub.c")], check=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(base / "cache"), "LD_LIBRARY_PATH": str(stub),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", "from cudal2.library import dispatch; dispatch.build()"], env=env,
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    return env


def test_a_shape_whose_packed_key_collides_is_not_served_by_another_shapes_kernel(dispatcher_env):
    # The table was keyed by (M << 42) ^ (N << 21) ^ K: a call with 2^22 more rows than a served
    # shape (64 + 4194304 rows of K=128: 1 GiB of fp16, nothing unusual on an H100), or with N^1
    # and K + 2^21, found the served shape's kernel and launched it with that shape's grid: the
    # rows past 64 were never written (a wrong result, silently).
    prog = textwrap.dedent("""
        from cudal2.library import dispatch
        from cudal2.library.arrays import InputError
        ext = dispatch.load()
        ext.clear()
        asked = []
        ext.set_pending([], [], lambda M, N, K: asked.append((M, N, K)) or False, InputError)
        launch = (0, [1, 1, 1], [128, 1, 1], [1, 1, 1], 0, [[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [2, 0, 0, 0, 0]])
        ext.add_kernel("served", 64, 128, 128, 0, [launch])
        rc = [ext.launch_ptrs(M, N, K, 256, 256, 256, 0)
              for M, N, K in ((64, 128, 128), (64 + (1 << 22), 128, 128), (64, 129, 128 + (1 << 21)))]
        print(rc, ext.stats()[0])
    """)
    r = subprocess.run([sys.executable, "-c", prog], env=dispatcher_env, capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[0] == "[0, 1, 1] {'served': 1}", r.stdout
