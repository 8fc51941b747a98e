"""sm90raw SWAP=1: the kernel computes C^T = B . A^T over the transposed problem and stores C transposed,
for tall outputs (M >> N). Checked here: where it is offered and refused, that the render declares the
caller's shape while its tiles, masks and tensor maps are the transpose's, and that it builds for sm_90a
with no spills through the judge's build (its machine-code checks included). Nothing here runs on a GPU
(tests/test_gpu_sm90raw.py verifies it through the judge; eval/sm90raw_check.py --tall times it)."""

import shutil

import pytest

from cudal2.harness import launch, policy
from cudal2.kernels.family import Limits, cdiv
from cudal2.kernels.sm90raw import Sm90Raw
from cudal2.problem import Problem

from .test_family_sm90raw import build_clean

FAM = Sm90Raw()
LIM = Limits()
TALL = Problem(4096, 128, 12288)       # the dev mid band's tall output: A (100 MB) streamed from HBM
ODD = Problem(1001, 257, 1032)         # M, N and K tails; C's rows of odd length


def point(**kw) -> dict:
    base = dict(BM=128, BN=64, CONSUMERS=2, STAGES=8, GROUP_M=8, ORDER="grouped", EPI="direct", CLUSTER=1,
                MAX_CTAS=132, SPLIT_K=1, SCHED="tiles", KSPLIT=2, SWAP=1)
    return {**base, **kw}


def test_a_swapped_point_is_valid_for_a_tall_output():
    assert FAM.invalid(point(), TALL, LIM) is None
    assert FAM.invalid(point(KSPLIT=1, SCHED="pingpong", STAGES=6), ODD, LIM) is None


def test_a_swapped_point_is_refused_where_n_is_not_below_m():
    # the unswapped point with BM and BN traded does the same work with contiguous stores
    for p in (Problem(128, 4096, 12288), Problem(2048, 2048, 2048)):
        reason = FAM.invalid(point(), p, LIM)
        assert reason and "N >= M" in reason, reason


@pytest.mark.parametrize("kw", [dict(EPI="tma"), dict(SPLIT_K=2, KSPLIT=1), dict(SCHED="streamk", KSPLIT=1),
                                dict(SCHED="hybrid", KSPLIT=1), dict(CLUSTER=2, KSPLIT=1), dict(SWAP=2)])
def test_invalid_names_what_the_swap_cannot_do(kw):
    reason = FAM.invalid(point(**kw), TALL, LIM)
    assert reason and "SWAP" in reason, reason


def test_the_space_offers_swap_only_where_its_rules_allow():
    swapped = [x for x in FAM.points() if x["SWAP"]]
    assert swapped and all(x["EPI"] == "direct" and x["SPLIT_K"] == 1 and x["CLUSTER"] == 1
                           and x["SCHED"] in ("tiles", "pingpong") for x in swapped)
    # every allowed unswapped structure has its swapped twin
    assert len(swapped) == sum(1 for x in FAM.points() if not x["SWAP"] and FAM._param_rules({**x, "SWAP": 1}) is None)


def test_the_tiles_are_laid_over_the_transpose():
    d = FAM.context(point(), TALL)
    assert (d["TILES_M"], d["TILES_N"]) == (cdiv(TALL.N, 128), cdiv(TALL.M, 64))   # 1 x 64 tiles
    assert d["GRID"] == 128 and (d["C_M"], d["C_N"]) == (TALL.M, TALL.N)
    assert FAM.frame(point(), TALL) == Problem(TALL.N, TALL.M, TALL.K)
    assert FAM.frame(point(SWAP=0), TALL) == TALL


def test_render_declares_the_callers_shape_and_trades_the_tensor_maps():
    src = FAM.render(point(), TALL)
    assert policy.check(src) == [] and policy.check_device_only(src) == []
    assert "// cudal2-shapes: 4096x128x12288" in src
    assert "constexpr int kM = 128, kN = 4096, kK = 12288;" in src
    [k] = launch.parse(src).resolve(TALL.M, TALL.N, TALL.K)
    # the first tensor map (the kernel's "A", the frame's 128 rows) is over the caller's B
    assert k.args[0] == ("tmap", ("B", (64, 128), 128)) and k.args[1] == ("tmap", ("A", (64, 64), 128))
    assert k.grid == (128, 1, 1) and k.cluster == (2, 1, 1)
    assert "Swapped operands" in src and "C + size_t(gn) * kM + gm" in src


def test_an_unswapped_point_stores_rows_as_before():
    src = FAM.render(point(SWAP=0, BM=64, BN=128, CONSUMERS=1), TALL)
    assert "Swapped operands" not in src and "C + size_t(gm) * kN + gn" in src
    [k] = launch.parse(src).resolve(TALL.M, TALL.N, TALL.K)
    assert k.args[0] == ("tmap", ("A", (64, 64), 128))


def test_build_classes_follow_the_frame():
    # M = 4096 divides 64 but N = 120 does not divide 128: the swapped tile's partial edge is its rows
    p = Problem(4096, 120, 12288)
    assert FAM.build_class(point(), p).endswith("|FalseTrueTrue")
    assert FAM.build_class(point(SWAP=0, BM=64, BN=128, CONSUMERS=1), p).endswith("|TrueFalseTrue")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("p,x", [(TALL, point()), (ODD, point(KSPLIT=1, SCHED="pingpong", STAGES=6))],
                         ids=["tall-ksplit2", "odd-pingpong"])
def test_swapped_point_builds_without_spills(p, x, tmp_path):
    build_clean(p, x, tmp_path)
