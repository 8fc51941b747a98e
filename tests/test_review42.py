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
        ext.add_kernel("served", 64, 128, 128, 0, [launch], 0)
        rc = [ext.launch_ptrs(M, N, K, 256, 256, 256, 0, 0)
              for M, N, K in ((64, 128, 128), (64 + (1 << 22), 128, 128), (64, 129, 128 + (1 << 21)))]
        print(rc, ext.stats()[0])
    """)
    r = subprocess.run([sys.executable, "-c", prog], env=dispatcher_env, capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[0] == "[0, 1, 1] {'served': 1}", r.stdout


def test_a_kernel_is_launched_only_for_the_device_its_module_loaded_on(dispatcher_env):
    # (found not closed by review 48, closed after it) the table kept no device: a call on another
    # GPU of the process launched a function of device 0's context on that GPU's stream; the launch
    # failed and the entry left the table for every device (a model split over GPUs in one process).
    prog = textwrap.dedent("""
        from cudal2.library import dispatch
        from cudal2.library.arrays import InputError
        ext = dispatch.load()
        ext.clear()
        ext.set_pending([], [], lambda M, N, K: False, InputError)
        launch = (0, [1, 1, 1], [128, 1, 1], [1, 1, 1], 0, [[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [2, 0, 0, 0, 0]])
        ext.add_kernel("served", 64, 128, 128, 0, [launch], 1)
        print([ext.launch_ptrs(64, 128, 128, 256, 256, 256, 0, dev) for dev in (0, 1, 2)], ext.stats()[0])
    """)
    r = subprocess.run([sys.executable, "-c", prog], env=dispatcher_env, capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[0] == "[1, 0, 1] {'served': 1}", r.stdout


# --- the manifest: every malformed field is a one-line LibraryError at load --------------------

def _lib_entry(folder, **over):
    from tests.test_library import entry, put
    e = entry(folder, "e1", M=64, N=128, K=128, score=1.5)
    e.measured["bench"] = {"speedup": {"eager": 1.5, "graph": 1.5, "flushed": 1.5}}
    put(folder, e)
    doc = json.loads((folder / "manifest.json").read_text())
    doc["entries"][0].update(over)
    (folder / "manifest.json").write_text(json.dumps(doc))


BAD_FIELDS = {
    "m_range not a pair": {"M": None, "m_range": "ab"},
    "m_range of one": {"M": None, "m_range": [1]},
    "m_range reversed": {"M": None, "m_range": [4096, 1]},
    "M a float": {"M": 64.0},
    "M negative": {"M": -64},
    "M past 32 bits": {"M": 2**32 + 64},
    "id a list": {"id": [1]},
    "source an int": {"source": 5},
    "measured a list": {"measured": []},
    "provenance a list": {"provenance": []},
    "bench speedup a string": {"measured": {"score": 1.5, "bench": {"speedup": {"eager": "3"}}}},
    "bench speedup infinite": {"measured": {"score": 1.5, "bench": {"speedup": {"eager": float("inf")}}}},
    "bench history of ints": {"measured": {"score": 1.5, "bench": {"speedup": {"eager": 1.5}}, "bench_history": [5]}},
}


@pytest.mark.parametrize("what", sorted(BAD_FIELDS))
def test_a_malformed_manifest_field_is_a_library_error_at_load_not_a_crash_in_a_call(tmp_path, what):
    # Before: these loaded (or died in Library() with TypeError/AttributeError/IndexError), and an
    # m_range of the wrong form raised TypeError/IndexError out of lookup, i.e. out of the user's
    # matmul call; "M a float" was served at M=64 and then could not be handed to the dispatcher.
    from cudal2.library import Library, LibraryError
    _lib_entry(tmp_path, **BAD_FIELDS[what])
    with pytest.raises(LibraryError) as err:
        lib = Library(tmp_path)
        lib.lookup(64, 128, 128)
    assert "\n" not in str(err.value) and "manifest.json: entry 0" in str(err.value)


def test_a_manifest_file_name_outside_the_folder_cannot_make_the_writer_delete_it(tmp_path):
    # A hostile manifest names a file outside the library folder as an entry's source, with that
    # file's hash; publishing a better entry at the shape unlinked the replaced entry's files:
    # folder / "../victim.cu", outside the library.
    from cudal2.library import LibraryError, manifest
    from tests.test_library import add, entry, put
    folder = tmp_path / "lib"
    victim = tmp_path / "victim.cu"
    victim.write_text("// someone else's file\n")
    old = entry(folder, "old", M=64, N=128, K=128, score=1.1)
    put(folder, old)
    doc = json.loads((folder / "manifest.json").read_text())
    doc["entries"][0].update(source="../victim.cu", source_sha256=manifest.sha256_text(victim.read_text()))
    (folder / "manifest.json").write_text(json.dumps(doc))
    try:
        add(folder, entry(folder, "new", M=64, N=128, K=128, score=2.0))
    except LibraryError as e:
        assert "plain file name" in str(e)
    assert victim.exists()


# --- publication: a reordered M-range entry must beat its parent measured now ----------------------

def test_an_m_range_entry_is_published_only_above_the_entry_of_the_same_range_measured_now(tmp_path):
    # `cudal2 sass` publishes a reordered entry through writer.add with the parent's fresh score in
    # `rescored`; writer.add compared only exact shapes, so for an M-range parent the reorder was
    # published beside it whatever it scored (1.2 against the parent's 1.5 measured now).
    from cudal2.library import manifest
    from tests.test_library import add, entry, put
    parent = entry(tmp_path, "parent", M=None, N=256, K=64, m_range=[1, 4096], score=1.5)
    put(tmp_path, parent)
    slower = entry(tmp_path, "parent-sass-0123456789", M=None, N=256, K=64, m_range=[1, 4096], score=1.2)
    assert not add(tmp_path, slower, rescored={"parent": 1.5})
    assert [e.id for e in manifest.read(tmp_path)] == ["parent"]
    faster = entry(tmp_path, "parent-sass-abcdef0123", M=None, N=256, K=64, m_range=[1, 4096], score=1.8)
    assert add(tmp_path, faster, rescored={"parent": 1.5})
    assert [e.id for e in manifest.read(tmp_path)] == ["parent-sass-abcdef0123"]


# --- the results store: a verdict is reused only under the judging code that reached it ------------

@pytest.mark.parametrize("changed", ["build rules", "judge code"])
def test_a_verdict_stored_under_older_judging_code_is_not_reused(tmp_path, monkeypatch, changed):
    # The result key named the source, shape, config sections, GPU and nvcc, not the code that
    # judged: after a rule or judge fix, a resumed run found a cheat's stored "verified" before
    # building it again (the build cache is keyed on the rules, the results store was not), and
    # with search.confirm = false the engine published that stale verdict.
    from cudal2.config import Config
    from cudal2.harness import build, evaluate
    from cudal2.harness.store import Store
    from cudal2.problem import Problem
    from cudal2.result import EvalResult, Stage
    cfg, p, src = Config(), Problem(64, 64, 64), "// a kernel once verified\n"
    store = Store(tmp_path / "run.db")
    store.put(evaluate.result_key(src, p, cfg, "H100"), EvalResult("x", "h", 64, 64, 64, stage=Stage.DONE, ok=True))
    assert evaluate.stored(store, src, p, cfg, "H100") is not None
    if hasattr(evaluate, "judge_version"):
        evaluate.judge_version.cache_clear()
    if changed == "build rules":
        monkeypatch.setattr(build, "rules_version", lambda: "rules after a fix")
    else:
        real = Path.read_bytes
        monkeypatch.setattr(Path, "read_bytes", lambda self: real(self) + (b"# fixed\n" if self.name == "judge.py"
                                                                           else b""))
    try:
        assert evaluate.stored(store, src, p, cfg, "H100") is None
    finally:
        if hasattr(evaluate, "judge_version"):
            evaluate.judge_version.cache_clear()
