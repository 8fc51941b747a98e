"""The sm80 family (mma.sync + ldmatrix + cp.async pipeline): renders policy-clean files, rejects
impossible points with a reason, builds with nvcc, and its prior prefers filling the GPU."""

import json
import shutil

import pytest

from cudal2.config import BuildConfig
from cudal2.harness import policy
from cudal2.harness.build import build
from cudal2.kernels.family import Limits
from cudal2.kernels.sm80 import Sm80
from cudal2.problem import Problem, parse_claim

FAM = Sm80()
LIM = Limits()
BIG, EDGE, SKINNY = Problem(4096, 4096, 4096), Problem(257, 136, 1032), Problem(128, 4096, 4096)


def point(**kw) -> dict:
    base = dict(BM=128, BN=128, BK=32, WARPS_M=2, WARPS_N=2, STAGES=4, GROUP_M=8, SPLIT_K=1)
    return {k: kw.get(k, v) for k, v in base.items()}


# A small representative subset: big and small tiles, both BK, 1 to 16 warps, 2 to 6 stages,
# split-K, shapes that divide their tiles and shapes that do not (odd M, N % 8 != 0, K tail).
SUBSET = [
    (BIG, point()),
    (BIG, point(BM=256, BN=128, BK=64, WARPS_M=4, WARPS_N=2, STAGES=3)),
    (BIG, point(BM=128, BN=256, WARPS_M=2, WARPS_N=4, STAGES=3, GROUP_M=16)),
    (SKINNY, point(SPLIT_K=4, STAGES=3)),
    (EDGE, point(BM=64, BN=64, BK=64, STAGES=3, GROUP_M=4, SPLIT_K=4)),
    (EDGE, point(BM=32, BN=32, STAGES=2, GROUP_M=1)),
    (Problem(300, 77, 264), point(BM=64, BN=32, WARPS_M=4, WARPS_N=1, STAGES=6, GROUP_M=1)),
    (Problem(64, 64, 8192), point(BM=64, BN=64, WARPS_M=4, WARPS_N=4, STAGES=5, SPLIT_K=16)),
]


@pytest.mark.parametrize("p,params", SUBSET, ids=[f"{p}-{i}" for i, (p, _) in enumerate(SUBSET)])
def test_subset_points_are_valid(p, params):
    assert FAM.invalid(params, p, LIM) is None


@pytest.mark.parametrize("p,params", SUBSET, ids=[f"{p}-{i}" for i, (p, _) in enumerate(SUBSET)])
def test_rendered_source_passes_policy(p, params):
    assert policy.check(FAM.render(params, p)) == []


def test_rendered_source_declares_its_shape_and_names_family_and_params():
    p, params = SUBSET[4]
    src = FAM.render(params, p)
    assert parse_claim(src).covers(p) and f"// cudal2-shapes: {p.M}x{p.N}x{p.K}" in src
    head = src.split("#include")[0]
    assert '"sm80"' in head and json.dumps(params, sort_keys=True) in head


def test_invalid_rejects_a_point_over_the_smem_limit():
    params = point(BM=256, BN=128, BK=64, WARPS_M=4, WARPS_N=2, STAGES=6)  # 6 x 48 KB of stages
    reason = FAM.invalid(params, BIG, LIM)
    assert reason and "shared memory" in reason


def test_invalid_rejects_a_warp_tile_below_mma_granularity():
    reason = FAM.invalid(point(BM=32, WARPS_M=4), BIG, LIM)  # 8-row warp tiles
    assert reason and "multiple of 16" in reason


def test_invalid_rejects_split_k_shorter_than_one_k_tile():
    reason = FAM.invalid(point(BK=64, SPLIT_K=16), Problem(128, 128, 512), LIM)  # 32 K per split < BK
    assert reason and "SPLIT_K" in reason


def test_invalid_rejects_too_many_accumulator_registers():
    reason = FAM.invalid(point(BM=256, BN=128, WARPS_M=2, WARPS_N=2), BIG, LIM)  # 128x64 warp tile
    assert reason and "registers" in reason


BUILDS = [
    (BIG, point(BM=128, BN=256, WARPS_M=2, WARPS_N=4, STAGES=3)),           # divisible: no predication
    (EDGE, point(BM=64, BN=64, BK=64, WARPS_M=2, WARPS_N=2, STAGES=3)),     # M, N and K edges
    (SKINNY, point(SPLIT_K=4, STAGES=3)),                                   # split-K + reduction kernel
]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("p,params", BUILDS, ids=["4096cubed", "257x136x1032", "splitk4"])
def test_valid_point_builds_without_spills(p, params, tmp_path):
    assert FAM.invalid(params, p, LIM) is None
    r = build(FAM.render(params, p), BuildConfig(cache_dir=str(tmp_path), archs=list(FAM.build_archs)))
    assert r.ok, r.reason
    gemm = [v for k, v in r.resources.items() if "sm80_hgemm" in k]
    assert gemm and all(v["spill_stores"] == 0 for v in gemm)
    assert any("splitk_reduce" in k for k in r.resources) == (params["SPLIT_K"] > 1)


def test_prior_prefers_a_full_wave_over_a_single_cta():
    # 128x128x8192 on 132 SMs: one 128x128 tile is a single CTA; 32x32 tiles split 8 ways in K
    # launch 16 x 8 = 128 CTAs, about one full wave.
    p = Problem(128, 128, 8192)
    single = point(BM=128, BN=128, WARPS_M=2, WARPS_N=2, STAGES=4)
    full = point(BM=32, BN=32, WARPS_M=2, WARPS_N=2, STAGES=4, SPLIT_K=8)
    assert FAM.context(single, p)["CTAS"] == 1 and FAM.context(full, p)["CTAS"] == 128
    assert FAM.invalid(single, p, LIM) is None and FAM.invalid(full, p, LIM) is None
    assert FAM.prior(full, p, LIM) > FAM.prior(single, p, LIM)


def test_prior_favourite_at_4096_cubed_fills_every_sm():
    best = max(FAM.valid_points(BIG, LIM), key=lambda x: FAM.prior(x, BIG, LIM))
    assert FAM.context(best, BIG)["CTAS"] >= LIM.sm_count


def test_prior_avoids_split_k_when_tiles_already_fill_the_gpu():
    assert FAM.prior(point(), BIG, LIM) > FAM.prior(point(SPLIT_K=4), BIG, LIM)
