"""sm90raw SCHED="pingpong" (issue 12): two consumer warpgroups own whole tiles and take the CTA's items
in turn, so one's epilogue runs beside the other's mainloop. Checked here: the rules that refuse what
the layout cannot do, the render's shape (one reading warpgroup per stage, whole-tile rows per
consumer), the render's own ring arithmetic compiled on the host with g++ against the producer's
walk, and builds for sm_90a with no spills. Nothing here runs on a GPU (eval/sm90raw_check.py
--pingpong does)."""

import re
import shutil

import pytest

from cudal2.harness import launch, policy
from cudal2.kernels.family import Limits
from cudal2.kernels.sm90raw import Sm90Raw
from cudal2.problem import Problem

from .test_family_sm90raw import build_clean
from .test_sm90raw_hybrid import run_on_host

FAM = Sm90Raw()
LIM = Limits()
BIG = Problem(4096, 4096, 4096)


def point(**kw) -> dict:
    base = dict(BM=128, BN=128, CONSUMERS=2, STAGES=5, GROUP_M=8, EPI="tma", CLUSTER=1, MAX_CTAS=132,
                SPLIT_K=1, SCHED="pingpong", ORDER="grouped")
    return {**base, **kw}


# ---- rules ----------------------------------------------------------------------------------------
def test_a_ping_pong_tile_of_128_rows_is_valid():
    assert FAM.invalid(point(), BIG, LIM) is None
    assert FAM.invalid(point(BN=192, EPI="direct"), BIG, LIM) is None


@pytest.mark.parametrize("kw,word", [(dict(CONSUMERS=3, BM=192), "two consumer"), (dict(CONSUMERS=1), "two consumer"),
                                     (dict(BM=256), "64 or 128 rows"), (dict(SPLIT_K=2, EPI="direct"), "SPLIT_K"),
                                     (dict(BN=256), "accumulators")])
def test_invalid_names_what_ping_pong_cannot_do(kw, word):
    reason = FAM.invalid(point(**kw), BIG, LIM)
    assert reason and word in reason


def test_each_consumer_owns_whole_tiles_and_its_own_staging():
    d = FAM.context(point(), BIG)
    assert (d["WG_M"], d["M_SUB"], d["ACC"]) == (128, 2, 128)
    assert d["EPI_BYTES"] == 2 * 128 * 128 * 2                # a 128x128 fp16 staging area per consumer
    coop = FAM.context(point(SCHED="tiles", BN=256, STAGES=3), BIG)
    assert (coop["WG_M"], coop["EPI_BYTES"]) == (64, 128 * 256 * 2)


# ---- the render -----------------------------------------------------------------------------------
def test_render_passes_policy_and_launches_one_persistent_kernel():
    src = FAM.render(point(), BIG)
    assert policy.check(src) == [] and policy.check_device_only(src) == []
    [k] = launch.parse(src).resolve(BIG.M, BIG.N, BIG.K)
    assert k.name == "sm90raw_hgemm" and k.grid == (132, 1, 1) and k.block == (384, 1, 1)
    # the C box is a whole tile's rows: one consumer stores all 128
    assert ("tmap", ("C", (64, 128), 128)) in k.args


def test_a_stage_is_released_by_one_consumer_not_both():
    code = policy.strip_comments_and_strings(FAM.render(point(), BIG))
    assert re.search(r"constexpr int READERS = 1;", code)
    assert "mbar_init(empty_bar + 8 * s, CLUSTER * READERS * 4)" in code
    coop = policy.strip_comments_and_strings(FAM.render(point(SCHED="tiles", BN=256, STAGES=3), BIG))
    assert re.search(r"constexpr int READERS = CONSUMERS;", coop)


def test_comments_name_the_technique():
    assert "ping-pong consumers" in FAM.render(point(), BIG)


# The producer walks the CTA's items in order, KTILES k tiles each, around the ring; consumer c takes
# items c, c + 2, ... and must find each one's k tiles at the stage and phase the producer filled.
_HOST_MAIN = r"""
#include <cstdio>
int main() {
    int bad = 0, stage = 0;
    uint32_t phase = 0;
    for (int n = 0; n < 40; ++n) {                       // the CTA's n-th item
        int s; uint32_t ph;
        ring_at(n, s, ph);
        if (s != stage || ph != phase) ++bad;
        for (int kt = 0; kt < KTILES; ++kt)
            if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
    printf("%d\n", bad);
    return 0;
}
"""
RING_CASES = [(BIG, point()), (Problem(600, 1000, 520), point(EPI="direct", STAGES=3)),
              (Problem(2000, 3000, 1000), point(BN=192, EPI="direct", STAGES=4)),
              (Problem(4096, 4096, 4160), point(BM=64, BN=256, STAGES=4))]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
@pytest.mark.parametrize("p,x", RING_CASES, ids=[str(p) for p, _ in RING_CASES])
def test_each_consumer_finds_its_items_where_the_producer_put_them(p, x, tmp_path):
    assert FAM.invalid(x, p, LIM) is None
    assert run_on_host(FAM.render(x, p), ["ring_at"], _HOST_MAIN, tmp_path).strip() == "0"


# ---- builds ---------------------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("p,x", [(BIG, point()), (Problem(257, 136, 1032), point(BN=192, EPI="direct")),
                                 (BIG, point(CLUSTER=2, BN=192, EPI="direct"))], ids=["tma", "edge-direct", "cluster"])
def test_ping_pong_point_builds_without_spills(p, x, tmp_path):
    build_clean(p, x, tmp_path)
