"""The scrubbers close the on-chip channels between calls: a probe kernel finds the markers an
earlier launch left in local and shared memory (its output goes wrong), and finds nothing once
`guards.scrub` ran between the launches; a word written by raw local address anywhere in the
window survives without a scrub and not with one."""

import functools

import cupy as cp
import numpy as np
import pytest

from cudal2.harness import build, guards
from cudal2.harness.loader import load_artifact

from .conftest import KERNELS

pytestmark = pytest.mark.gpu

M, N, K = 1024, 1024, 64   # 4096 blocks: every SM runs some in every launch


@pytest.fixture(scope="module")
def probe(fast_cfg):
    res = build.build((KERNELS / "probe" / "state_probe_v2.cu").read_text(), fast_cfg.build)
    assert res.ok, res.reason
    mod = load_artifact(res.lib_path, res.kind, res.spec)
    yield mod
    mod.close()


def launches(mod, n: int, scrub: bool) -> list[bool]:
    """`n` probe calls on fresh inputs, back to back (with `guards.scrub` between them when asked;
    inputs and references made first, so nothing else runs between them); which outputs are right."""
    stream = cp.cuda.get_current_stream()
    rng = cp.random.default_rng()
    sets = []
    for _ in range(n):
        a, b = (rng.standard_normal(s).astype(cp.float16) for s in ((M, K), (N, K)))
        sets.append((a, b, cp.empty((M, N), cp.float16), a.astype(cp.float32) @ b.astype(cp.float32).T))
    for i, (a, b, c, _) in enumerate(sets):
        if scrub and i:
            guards.scrub()
        assert mod.call(a.data.ptr, b.data.ptr, c.data.ptr, M, N, K, 0, 0, stream.ptr) == 0
    return [bool(cp.abs(c.astype(cp.float32) - want).max() < 0.25) for _, _, c, want in sets]


def test_back_to_back_launches_see_each_others_markers(probe):
    assert not all(launches(probe, 4, scrub=False)[1:]), "the probe saw nothing: it no longer tests the scrubbers"


def test_a_scrub_between_launches_leaves_nothing_to_find(probe):
    assert all(launches(probe, 4, scrub=True)[1:])


@functools.lru_cache(maxsize=1)
def _window() -> cp.RawModule:
    return cp.RawModule(code=(KERNELS / "probe" / "local_window.cu").read_text())


def _raw_local(lo: int, hi: int, scrub: bool) -> int:
    """Markers at raw local addresses [lo, hi) of every thread slot, a scrub or not, then how
    many of them the next launch finds."""
    m = _window()
    grid, key = (2 * cp.cuda.Device().attributes["MultiProcessorCount"],), np.uint32(0x5EED1234)
    found = cp.zeros(1, dtype=cp.uint64)
    m.get_function("write_raw")(grid, (1024,), (np.uint32(lo), np.uint32(hi), key))
    if scrub:
        guards.scrub()
    m.get_function("read_raw")(grid, (1024,), (np.uint32(lo), np.uint32(hi), key, found))
    return int(found.get()[0])


def _frame_addr() -> int:
    out = cp.zeros(2, dtype=cp.uint64)
    _window().get_function("frame_addr")((1,), (32,), (out,))
    return int(out[0].get())


def test_a_word_written_above_a_full_frame_survives_without_a_scrub():
    # The control: a kernel reaches, by raw address, the window above a LOCAL_BYTES frame.
    lo = _frame_addr()
    assert lo + guards.LOCAL_BYTES < guards.LOCAL_TOP
    assert _raw_local(lo, guards.LOCAL_TOP, scrub=False) > 0


def test_no_word_of_the_local_window_survives_a_scrub():
    # The probe's markers are 32-bit words and the scrub's values are random, so about 0.07 of its
    # ~3e8 words (2 blocks of 1024 threads per SM, 1168 words each) match by chance per trial: one
    # did in 30 H100 trials (eval/scrub_coverage.py). Without a scrub all of them survive.
    lo = _frame_addr()
    words = 2 * cp.cuda.Device().attributes["MultiProcessorCount"] * 1024 * (guards.LOCAL_TOP - lo) // 4
    assert _raw_local(lo, guards.LOCAL_TOP, scrub=False) > words // 2
    assert _raw_local(lo, guards.LOCAL_TOP, scrub=True) <= 4


_BELOW = """
import cupy as cp, numpy as np, sys
from cudal2.config import Config
from cudal2.harness import guards, judge
m = cp.RawModule(code=open(sys.argv[1]).read())
cfg = Config.load(timing={"repeats": 3, "autotune_k": 4, "min_replay_ms": 0.2, "max_sets": 4})
for M, N, K in ((64, 64, 64), (257, 136, 1032), (4096, 4096, 4096)):
    judge.baselines_job(M, N, K, cfg)   # every baseline the judge runs (cuBLAS, cuBLASLt autotuned)
guards.scrub()
out = cp.zeros(2, dtype=cp.uint64)
m.get_function("frame_addr")((1,), (32,), (out,))
lo = int(out[0].get())
print("writing below the frame", flush=True)
m.get_function("write_raw")((1,), (32,), (np.uint32(lo - 64), np.uint32(lo), np.uint32(1)))
cp.cuda.Device().synchronize()
"""


def test_the_window_ends_below_the_scrubbed_frame():
    # What the scrub cannot reach must not exist: below a LOCAL_BYTES frame a store faults, after
    # every baseline (cuBLAS, cuBLASLt autotuned, at three shapes) and the harness's kernels ran
    # in the process.
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-c", _BELOW, str(KERNELS / "probe" / "local_window.cu")],
                       capture_output=True, text=True, timeout=120)
    # The marker shows the store itself faulted, not some setup step before it.
    assert "writing below the frame" in p.stdout, p.stderr[-500:]
    assert p.returncode != 0 and "IllegalAddress" in p.stderr, p.stderr[-500:]
