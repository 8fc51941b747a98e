"""sm90raw KSPLIT (issue 12's thin shapes): a cluster of KSPLIT CTAs computes one wide tile, each CTA a k
slice, and the fp32 partials are reduce-scattered through distributed shared memory (st.async into the
peers' rings), each rank storing one column slice. Checked here: the rules that refuse what the layout
cannot do, the launch (one tile per cluster, cluster dims), the render's exchange layout compiled on the
host with g++ (every peer's piece lands in its own 16 bytes inside the ring, the same address for the
writer and the reader), and builds for sm_90a with no spills through the judge's build (its
machine-code checks included). Nothing here runs on a GPU (tests/test_gpu_sm90raw.py and
eval/sm90raw_check.py do)."""

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
M512 = Problem(512, 4096, 4096)        # 64 tiles of 128x256: half the SMs without the split
THIN = Problem(128, 512, 16384)        # 16 tiles of 64x64: in clusters of 8, 128 CTAs


def point(**kw) -> dict:
    base = dict(BM=128, BN=256, CONSUMERS=2, STAGES=3, GROUP_M=8, ORDER="grouped", EPI="tma", CLUSTER=1,
                MAX_CTAS=132, SPLIT_K=1, SCHED="tiles", KSPLIT=2)
    return {**base, **kw}


# ---- rules ----------------------------------------------------------------------------------------
def test_a_k_split_that_fills_one_wave_is_valid():
    assert FAM.invalid(point(), M512, LIM) is None
    assert FAM.invalid(point(KSPLIT=4, EPI="direct"), Problem(128, 4096, 4096), LIM) is None
    assert FAM.invalid(point(BM=64, BN=64, CONSUMERS=1, STAGES=6, EPI="direct", KSPLIT=8), THIN, LIM) is None


@pytest.mark.parametrize("kw,p,word", [
    (dict(CLUSTER=2), M512, "CLUSTER=1"),
    (dict(SPLIT_K=2, EPI="direct"), M512, "SPLIT_K=1"),
    (dict(SCHED="hybrid"), M512, "SCHED=tiles"),
    (dict(MAX_CTAS=128), M512, "MAX_CTAS"),
    (dict(), Problem(1024, 4096, 4096), "wave"),                      # 128 tiles x 2 CTAs
    (dict(KSPLIT=4), M512, "wave"),
    (dict(BN=240, EPI="direct", KSPLIT=4), Problem(128, 4096, 4096), "8-column"),
    (dict(BN=208, KSPLIT=2), Problem(128, 4096, 4096), "16-column"),  # 104 columns a rank
    (dict(), Problem(512, 4096, 384), "k tiles"),                     # 3 k tiles a rank
    (dict(KSPLIT=3), M512, "one of"),
    (dict(BM=64, BN=64, CONSUMERS=1, EPI="direct", KSPLIT=8), Problem(128, 1024, 16384), "wave"),  # 32 x 8
    (dict(BM=64, BN=64, CONSUMERS=1, KSPLIT=8), THIN, "16-column"),  # 8 columns a rank: no stmatrix group
])
def test_invalid_names_what_the_k_split_cannot_do(kw, p, word):
    reason = FAM.invalid(point(**kw), p, LIM)
    assert reason and word in reason, reason


def test_clusters_that_cannot_all_be_resident_are_refused():
    # 16 clusters of 8: the H100 holds 15 at one CTA an SM (7 stages of 64x64, 116 KB), 30 at two (6
    # stages, 99 KB); measured 0.76 and 1.03-1.06 of the vendor at 64x1024x16384
    p = Problem(64, 1024, 16384)
    x = point(BM=64, BN=64, CONSUMERS=1, EPI="direct", KSPLIT=8)
    assert "resident" in FAM.invalid({**x, "STAGES": 7}, p, LIM)
    assert FAM.invalid({**x, "STAGES": 6}, p, LIM) is None
    # 32 clusters of 4 at one CTA an SM (30 resident), but 32 of 2 are fine
    thin = Problem(128, 1024, 16384)
    assert "resident" in FAM.invalid(point(BM=64, BN=64, CONSUMERS=1, STAGES=8, KSPLIT=4), thin, LIM)
    assert FAM.invalid(point(BM=64, BN=64, CONSUMERS=1, STAGES=8, KSPLIT=2), thin, LIM) is None


def test_resident_clusters_scale_with_ctas_per_sm():
    assert [LIM.resident_clusters(c, 1) for c in (1, 2, 4, 8)] == [132, 66, 30, 15]
    assert LIM.resident_clusters(8, 2) == 30 and LIM.resident_clusters(3, 1) == 0


def test_the_exchange_must_fit_in_the_ring():
    # 128x256 in pairs: a rank receives 128 x 128 fp32 (64 KB); one 48 KB stage cannot hold it, two can;
    # in fours: 3 x 128 x 64 x 4 = 96 KB, which two stages (96 KB) just hold
    assert FAM.context(point(), M512)["XS_BYTES"] == 128 * 128 * 4
    reason = FAM.invalid(point(STAGES=1), M512, LIM)
    assert reason and "ring" in reason
    assert FAM.invalid(point(STAGES=2), M512, LIM) is None
    assert FAM.context(point(KSPLIT=4), Problem(128, 4096, 4096))["XS_BYTES"] == 3 * 128 * 64 * 4
    assert FAM.invalid(point(KSPLIT=4, STAGES=2), Problem(128, 4096, 4096), LIM) is None


def test_a_point_without_the_parameter_means_no_split():
    old = {k: v for k, v in point(KSPLIT=1).items() if k != "KSPLIT"}
    assert FAM.complete(old)["KSPLIT"] == 1
    assert FAM.render(old, M512) == FAM.render(point(KSPLIT=1), M512).replace(', "KSPLIT": 1', "")


# ---- the render -----------------------------------------------------------------------------------
def test_render_launches_one_cluster_per_tile():
    src = FAM.render(point(), M512)
    assert policy.check(src) == [] and policy.check_device_only(src) == []
    [k] = launch.parse(src).resolve(M512.M, M512.N, M512.K)
    assert k.grid == (128, 1, 1) and k.cluster == (2, 1, 1) and k.block == (384, 1, 1)
    assert ("tmap", ("C", (64, 64), 128)) in k.args        # a rank stores 128 of the 256 columns, 64 a box


def test_comments_name_the_technique():
    src = FAM.render(point(), M512)
    assert "reduce-scatter" in src and "distributed shared memory" in src


# Every (sender, owner, consumer, thread, piece) of the exchange: its 16 bytes lie inside the ring's
# first XS_BYTES, no two pieces sent to one owner share an address, and every address is 16-aligned.
_XS_MAIN = r"""
#include <cstdio>
#include <vector>
int main() {
    int bad = 0;
    for (int to = 0; to < KSPLIT; ++to) {
        std::vector<int> hits(XS_BYTES / 16, 0);
        for (int from = 0; from < KSPLIT; ++from) {
            if (from == to) continue;
            for (int c = 0; c < CONSUMERS; ++c)
                for (int tid = 0; tid < 128; ++tid)
                    for (int i = 0; i < M_SUB * XJ; ++i) {
                        const uint32_t off = xs_offset(from, to, c, tid, i);
                        if (off % 16 || off + 16 > uint32_t(XS_BYTES)) { ++bad; continue; }
                        ++hits[off / 16];
                    }
        }
        for (int h : hits) bad += h != 1;
    }
    printf("%d\n", bad);
    return 0;
}
"""
XS_CASES = [(M512, point()), (Problem(128, 4096, 4096), point(KSPLIT=4, EPI="direct")),
            (Problem(300, 1000, 1000), point(BM=64, BN=160, CONSUMERS=1, STAGES=4, EPI="direct")),
            (Problem(384, 1024, 4096), point(BM=256, BN=128, STAGES=2, KSPLIT=4, EPI="direct")),
            (THIN, point(BM=64, BN=64, CONSUMERS=1, STAGES=6, EPI="direct", KSPLIT=8)),
            (Problem(64, 1000, 16392), point(BM=64, BN=128, CONSUMERS=1, STAGES=4, KSPLIT=8))]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
@pytest.mark.parametrize("p,x", XS_CASES, ids=[f"{p}-ks{x['KSPLIT']}" for p, x in XS_CASES])
def test_every_exchanged_piece_has_its_own_place_in_the_owners_ring(p, x, tmp_path):
    assert FAM.invalid(x, p, LIM) is None, FAM.invalid(x, p, LIM)
    assert run_on_host(FAM.render(x, p), ["xs_offset"], _XS_MAIN, tmp_path).strip() == "0"


# ---- builds ---------------------------------------------------------------------------------------
BUILDS = [(M512, point()), (Problem(257, 1000, 1032), point(EPI="direct")),
          (Problem(128, 4096, 4096), point(KSPLIT=4)),
          (THIN, point(BM=64, BN=64, CONSUMERS=1, STAGES=6, EPI="direct", KSPLIT=8))]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("p,x", BUILDS, ids=["tma", "edge-direct", "ksplit4", "ksplit8"])
def test_k_split_point_builds_without_spills(p, x, tmp_path):
    build_clean(p, x, tmp_path)


def test_the_points_left_out_of_the_space_are_all_invalid():
    # points() leaves out what `_param_rules` refuses, at any shape; a sample of the product's other
    # points must all be ones `invalid` refuses, at a thin shape and a big one, or the filter would
    # hide real kernels
    import random
    offered = {tuple(sorted(x.items())) for x in FAM.points()}
    rng = random.Random(0)
    sample = [{k: rng.choice(v) for k, v in FAM.space.items()} for _ in range(20000)]
    left_out = [x for x in sample if tuple(sorted(x.items())) not in offered]
    assert len(left_out) > 10000
    for x in left_out:
        for p in (M512, Problem(4096, 4096, 4096)):
            assert FAM.invalid(x, p, LIM), x
    # and the k split is offered only beside whole tiles, one cluster a tile
    assert all(x["CLUSTER"] == 1 and x["SCHED"] == "tiles" for x in FAM.points() if x["KSPLIT"] > 1)
