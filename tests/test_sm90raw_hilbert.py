"""sm90raw's Hilbert order (issue 12): the walk covers any grid once in near-unit steps, the render
carries it as a constant table that decodes to every work item once, points where the order
cannot matter or cannot apply are refused with a reason, and a Hilbert point builds for sm_90a
with no spills and no generic pointer to constant memory. Nothing here runs on a GPU."""

import re
import shutil

import pytest

from cudal2.config import BuildConfig
from cudal2.harness import policy
from cudal2.harness.build import build
from cudal2.kernels.family import Limits, cdiv
from cudal2.kernels.hilbert import walk
from cudal2.kernels.sm90raw import MAX_HILBERT_ITEMS, Sm90Raw
from cudal2.problem import Problem

FAM = Sm90Raw()
LIM = Limits()
BIG = Problem(4096, 4096, 4096)     # 32 x 16 items of 128x256: four waves on 132 SMs
ODD = Problem(1000, 3000, 512)      # 8 x 19 items of 128x160: odd sides


def point(**kw) -> dict:
    return FAM.complete({**dict(BM=128, BN=256, CONSUMERS=2, STAGES=4, GROUP_M=8, EPI="direct", CLUSTER=1,
                                MAX_CTAS=132, ORDER="hilbert"), **kw})


@pytest.mark.parametrize("w,h", [(1, 1), (1, 7), (7, 1), (2, 2), (16, 32), (19, 8), (33, 5), (13, 13)])
def test_walk_visits_every_cell_once_in_neighbouring_steps(w, h):
    o = walk(w, h)
    assert o[0] == (0, 0) and sorted(o) == sorted((x, y) for x in range(w) for y in range(h))
    steps = [abs(a[0] - b[0]) + abs(a[1] - b[1]) for a, b in zip(o, o[1:])]
    assert all(s <= 2 for s in steps) and sum(s == 2 for s in steps) <= 2


def test_walk_refuses_an_empty_grid():
    with pytest.raises(ValueError):
        walk(0, 3)


@pytest.mark.parametrize("p,params", [(BIG, point()), (ODD, point(BN=160)), (BIG, point(CLUSTER=2, STAGES=3))],
                         ids=["4096^3", "odd", "cluster2"])
def test_rendered_walk_table_decodes_to_every_item_once(p, params):
    assert "module __constant__ data" in FAM.invalid(params, p, LIM)   # refused, but the render stays right
    src = FAM.render(params, p)
    assert policy.check_device_only(src) == []
    body = re.search(r"__constant__ uint32_t WALK\[ITEMS\] = \{(.*?)\};", src, re.S).group(1)
    items = [(int(v) >> 16, int(v) & 0xFFFF) for v in re.findall(r"\d+", body)]
    rows, cols = cdiv(cdiv(p.M, params["BM"]), params["CLUSTER"]), cdiv(p.N, params["BN"])
    assert sorted(items) == sorted((r, c) for r in range(rows) for c in range(cols))
    assert "Hilbert order" in src and "GROUP_M item-rows" not in src


def test_grouped_order_renders_no_table():
    src = FAM.render(point(ORDER="grouped"), BIG)
    assert "WALK" not in src and "grouped raster" in src


@pytest.mark.parametrize("p,kw,why", [
    (Problem(128, 1024, 16384), dict(BM=64, BN=128, CONSUMERS=1, SPLIT_K=4), "whole tiles only"),
    (Problem(1024, 1024, 1024), {}, "first wave"),
    (BIG, dict(GROUP_M=4), "does not use GROUP_M"),
    (Problem(16384, 16384, 1024), dict(BN=128), "walk table"),
])
def test_invalid_refuses_hilbert_where_it_cannot_apply_or_cannot_matter(p, kw, why):
    assert why in (FAM.invalid(point(**kw), p, LIM) or "")


def test_table_limit_fits_constant_memory():
    assert MAX_HILBERT_ITEMS * 4 <= 32 * 1024


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_a_hilbert_point_is_refused_by_the_build_for_its_constant_table(tmp_path):
    r = build(FAM.render(point(BN=160), ODD), BuildConfig(cache_dir=str(tmp_path), archs=list(FAM.build_archs)))
    assert not r.ok and "module __constant__ data" in r.reason
