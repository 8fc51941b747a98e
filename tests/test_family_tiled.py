"""The tiled family (the short mma.sync HGEMM for training): policy-clean contract-v2 renders, the
same text for every shape, a launch spec that resolves to the family's grid, short files, oversized tiles refused,
and points that build for sm_90a with no spills. Nothing here runs on a GPU."""

import pytest

from cudal2.config import BuildConfig
from cudal2.harness import launch, policy
from cudal2.harness.build import build
from cudal2.kernels.family import Limits, get_family
from cudal2.problem import Problem, parse_claim

FAM = get_family("tiled")
LIM = Limits()
ODD = Problem(257, 136, 1032)


def test_every_point_renders_a_policy_clean_file_the_same_for_every_shape():
    for params in FAM.valid_points(ODD, LIM):
        src = FAM.render(params, ODD)
        assert policy.check(src) == [] and policy.check_device_only(src) == []
        assert parse_claim(src).universal and src == FAM.render(params, Problem(4096, 64, 8))


@pytest.mark.parametrize("params", [{"BM": 32, "BN": 128, "BK": 64}, {"BM": 128, "BN": 64, "BK": 32}])
def test_launch_spec_covers_the_shape_with_one_warp_per_32x32(params):
    (k,) = launch.parse(FAM.render(params, Problem(64, 64, 64))).resolve(ODD.M, ODD.N, ODD.K)
    assert k.grid[0] * params["BN"] >= ODD.N > (k.grid[0] - 1) * params["BN"]
    assert k.grid[1] * params["BM"] >= ODD.M > (k.grid[1] - 1) * params["BM"]
    assert k.block[0] == 32 * (params["BM"] // 32) * (params["BN"] // 32)


def test_a_render_is_short_enough_to_learn():
    # the reason the family exists: an sm80 render is about four times longer
    longest = max(len(FAM.render(x, ODD)) for x in FAM.valid_points(ODD, LIM))
    sm80 = get_family("sm80")
    assert longest < 4500 < len(sm80.render(sm80.valid_points(ODD, LIM)[0], ODD))


def test_invalid_refuses_oversized_tiles_only():
    assert "twice" in FAM.invalid({"BM": 128, "BN": 64, "BK": 32}, Problem(16, 64, 64), LIM)
    assert FAM.invalid({"BM": 32, "BN": 32, "BK": 32}, Problem(1, 1, 8), LIM) is None


@pytest.mark.parametrize("params", [{"BM": 32, "BN": 32, "BK": 64}, {"BM": 128, "BN": 128, "BK": 64}])
def test_valid_point_builds_without_spills(params, tmp_path):
    r = build(FAM.render(params, ODD), BuildConfig(cache_dir=str(tmp_path), archs=list(FAM.build_archs)))
    assert r.ok, r.reason
    (res,) = r.resources.values()
    assert res["spill_stores"] == 0 and res["spill_loads"] == 0 and res["stack"] == 0


def test_it_is_not_offered_to_the_llm_as_a_seed_example():
    from cudal2.retrieval.corpus import seed_chunks
    fams = {c.meta["family"] for c in seed_chunks(shapes=[(256, 256, 256)])}
    assert "tiled" not in fams and "sm80" in fams
