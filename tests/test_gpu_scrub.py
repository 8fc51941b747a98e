"""The scrubbers close the on-chip channels between calls: a probe kernel finds the markers an
earlier launch left in local and shared memory (its output goes wrong), and finds nothing once
`guards.scrub` ran between the launches."""

import cupy as cp
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
