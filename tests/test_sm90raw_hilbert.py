"""sm90raw ORDER="hilbert" (issue 12): the render's own item_of and item_index, compiled on the host
with g++, walk every item of the grid exactly once, agree with a recursive generalized Hilbert
curve written here, step between edge-adjacent items (one diagonal step at most, where an odd
rectangle forces it), and invert each other. Points build for sm_90a. Nothing here runs on a GPU
(eval/sm90raw_check.py --hilbert does)."""

import shutil

import pytest

from cudal2.config import BuildConfig
from cudal2.harness.build import build
from cudal2.kernels.family import Limits
from cudal2.kernels.sm90raw import Sm90Raw
from cudal2.problem import Problem

from .test_sm90raw_hybrid import run_on_host

FAM = Sm90Raw()
LIM = Limits()


def point(**kw) -> dict:
    base = dict(BM=128, BN=256, CONSUMERS=2, STAGES=3, GROUP_M=8, EPI="tma", CLUSTER=1, MAX_CTAS=132,
                SPLIT_K=1, SCHED="tiles", ORDER="hilbert")
    return {**base, **kw}


def _sgn(v: int) -> int:
    return (v > 0) - (v < 0)


def curve(x, y, ax, ay, bx, by):
    """The reference: the generalized Hilbert curve of the rectangle at (x, y) walked along a first."""
    w, h = abs(ax + ay), abs(bx + by)
    dax, day, dbx, dby = _sgn(ax), _sgn(ay), _sgn(bx), _sgn(by)
    if h == 1 or w == 1:
        step = (dax, day) if h == 1 else (dbx, dby)
        for i in range(max(w, h) if h == 1 or w == 1 else 0):
            yield x + step[0] * i, y + step[1] * i
        return
    ax2, ay2, bx2, by2 = ax // 2, ay // 2, bx // 2, by // 2
    if 2 * w > 3 * h:
        if abs(ax2 + ay2) % 2 and w > 2:
            ax2, ay2 = ax2 + dax, ay2 + day
        yield from curve(x, y, ax2, ay2, bx, by)
        yield from curve(x + ax2, y + ay2, ax - ax2, ay - ay2, bx, by)
    else:
        if abs(bx2 + by2) % 2 and h > 2:
            bx2, by2 = bx2 + dbx, by2 + dby
        yield from curve(x, y, bx2, by2, ax2, ay2)
        yield from curve(x + bx2, y + by2, ax, ay, bx - bx2, by - by2)
        yield from curve(x + (ax - dax) + (bx2 - dbx), y + (ay - day) + (by2 - dby), -bx2, -by2, -(ax - ax2), -(ay - ay2))


def reference(rows: int, cols: int) -> list[tuple[int, int]]:
    """(item row, tile col) in walk order, the longer side first."""
    walk = curve(0, 0, cols, 0, 0, rows) if cols >= rows else curve(0, 0, 0, rows, cols, 0)
    return [(y, x) for x, y in walk]


@pytest.mark.parametrize("rows,cols", [(1, 1), (1, 7), (7, 1), (2, 2), (4, 4), (32, 16), (16, 32), (5, 3), (31, 17), (64, 64)])
def test_the_reference_visits_every_cell_once_by_near_neighbour_steps(rows, cols):
    walk = reference(rows, cols)
    assert sorted(walk) == [(r, c) for r in range(rows) for c in range(cols)]
    diagonal = sum(abs(a[0] - b[0]) + abs(a[1] - b[1]) != 1 for a, b in zip(walk, walk[1:]))
    assert all(max(abs(a[0] - b[0]), abs(a[1] - b[1])) == 1 for a, b in zip(walk, walk[1:]))
    assert diagonal <= 1


_HOST_MAIN = r"""
#include <cstdio>
int main() {
    for (int t = 0; t < ITEMS_M * TILES_N; ++t) {
        int im, tn;
        item_of(t, im, tn);
        std::printf("%d %d %d\n", im, tn, INDEX);
    }
    return 0;
}
"""

# (problem, point): square, wide, tall and odd item grids, one with a 2-CTA cluster (items of two
# tiles), one with split-K (its reduction needs item_index)
CASES = [
    (Problem(4096, 4096, 4096), point()),                                      # 32 x 16 items
    (Problem(8192, 8192, 8192), point(CLUSTER=2)),                             # 32 x 32 items of 2 tiles
    (Problem(1000, 7000, 2048), point(BN=208, EPI="direct")),                  # 8 x 34
    (Problem(6000, 700, 2048), point(BN=128, EPI="direct")),                   # 47 x 6, taller than wide
    (Problem(1024, 640, 16384), point(BM=64, BN=64, CONSUMERS=1, EPI="direct", SPLIT_K=2)),   # split-K
]
IDS = [f"{p}-{x['BM']}x{x['BN']}-c{x['CLUSTER']}-s{x['SPLIT_K']}" for p, x in CASES]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
@pytest.mark.parametrize("p,x", CASES, ids=IDS)
def test_the_renders_walk_is_the_reference_curve_and_item_index_inverts_it(p, x, tmp_path):
    assert FAM.invalid(x, p, LIM) is None
    d = FAM.context(x, p)
    src = FAM.render(x, p)
    funcs = ["hsgn", "habs", "hilbert_inside", "hilbert_step", "hilbert_root", "item_of"] + (["item_index"] if d["WS"] else [])
    main = _HOST_MAIN.replace("INDEX", "item_index(im, tn)" if d["WS"] else "-1")
    out = run_on_host(src, funcs, main, tmp_path).split("\n")
    rows = [tuple(map(int, line.split())) for line in out if line]
    items_m = d["ITEMS"] // d["TILES_N"]
    assert [(im, tn) for im, tn, _ in rows] == reference(items_m, d["TILES_N"])
    if d["WS"]:
        assert [i for _, _, i in rows] == list(range(len(rows)))


def test_hilbert_with_another_group_m_is_the_same_kernel():
    reason = FAM.invalid(point(GROUP_M=16), Problem(4096, 4096, 4096), LIM)
    assert reason and "same kernel" in reason


def test_the_render_says_which_order_it_walks():
    src = FAM.render(point(), Problem(4096, 4096, 4096))
    assert "CTAs in Hilbert order" in src and "generalized Hilbert curve" in src
    assert "CTAs in GROUP_M=8 order" in FAM.render(point(ORDER="grouped"), Problem(4096, 4096, 4096))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("p,x", [CASES[0], CASES[4]], ids=[IDS[0], IDS[4]])
def test_a_hilbert_point_builds_without_spills(p, x, tmp_path):
    r = build(FAM.render(x, p), BuildConfig(cache_dir=str(tmp_path), archs=list(FAM.build_archs)))
    assert r.ok, r.reason
    assert "sm90raw_hgemm" in {e.split("@")[0] for e in r.resources}
    for entry, res in r.resources.items():
        assert res["spill_stores"] == 0 and res["spill_loads"] == 0 and res["stack"] == 0, (entry, res)
