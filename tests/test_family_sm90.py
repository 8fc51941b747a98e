"""The sm90 (CUTLASS 3.x, Hopper) kernel family: rendering, validity rules, shared-memory model, prior,
and one real nvcc build. CPU only."""

import json
import re
import shutil

import pytest

from cudal2.harness import policy
from cudal2.harness.build import build, cutlass_include
from cudal2.kernels import family as family_mod
from cudal2.kernels.family import Limits
from cudal2.kernels.sm90 import Sm90
from cudal2.problem import Problem, parse_claim

FAM = Sm90()
LIM = Limits()
P4K = Problem(4096, 4096, 4096)
SHAPES = [P4K, Problem(8192, 8192, 8192), Problem(128, 4096, 4096), Problem(1024, 1024, 1024),
          Problem(2048, 8192, 1024), Problem(1, 4096, 4096), Problem(100, 1000, 72)]
TYPICAL = dict(TILE_M=128, TILE_N=256, TILE_K=64, CLUSTER_M=2, CLUSTER_N=1, SCHEDULE="cooperative", STAGES=0,
               RASTER="N", SWIZZLE=2, SCHEDULER="persistent", SPLIT_K=1)


def point(**over):
    return {**TYPICAL, **over}


def sample_points():
    """The 10 best-prior points of every shape, plus a stream-K and a ping-pong point of each."""
    out = []
    for p in SHAPES:
        ranked = sorted(FAM.valid_points(p, LIM), key=lambda x: -FAM.prior(x, p, LIM))
        picks = ranked[:10]
        picks += [x for x in ranked if x["SCHEDULER"] == "streamk" and x["SPLIT_K"] == 1][:1]
        picks += [x for x in ranked if x["SPLIT_K"] > 1][:1]
        picks += [x for x in ranked if x["SCHEDULE"] == "pingpong"][:1]
        out += [(x, p) for x in picks]
    return out


def test_registered_under_its_name():
    assert family_mod._registry["sm90"] is not None
    assert FAM.name == "sm90" and FAM.template == "sm90_cutlass.cu.j2" and FAM.build_archs == ("sm_90a",)


def test_rendered_sources_pass_the_policy():
    for x, p in sample_points():
        found = policy.check(FAM.render(x, p))
        assert found == [], (x, p, policy.reason(found))


def test_render_is_shape_generic_and_names_family_and_params():
    src = FAM.render(TYPICAL, P4K)
    assert parse_claim(src).universal  # run-time shape: one build serves every shape
    assert src == FAM.render(TYPICAL, Problem(8192, 8192, 8192))
    assert "kernel family: sm90" in src
    assert json.dumps(TYPICAL, sort_keys=True) in src
    for technique in ("wgmma", "TMA", "128B-swizzled", "mbarrier", "setmaxnreg", "persistent", "multicast",
                      "TMA store"):
        assert technique in src, technique


def test_render_follows_the_parameters():
    src = FAM.render(point(SCHEDULE="pingpong", TILE_M=64, STAGES=4, SCHEDULER="persistent"), P4K)
    assert "KernelTmaWarpSpecializedPingpong" in src and "StageCount<4>" in src and "Shape<_64, _256, _64>" in src
    sk = FAM.render(point(TILE_N=128, CLUSTER_M=1, SCHEDULER="streamk", RASTER="M", SWIZZLE=1),
                    Problem(128, 4096, 4096))
    assert "StreamKScheduler" in sk and "ReductionMode::Deterministic" in sk
    assert "StageCountAutoCarveout" in FAM.render(TYPICAL, P4K)
    split = FAM.render(point(TILE_N=128, CLUSTER_M=1, SCHEDULER="streamk", SPLIT_K=8), Problem(128, 512, 16384))
    assert "DecompositionMode::SplitK" in split and "splits = 8;" in split and "Deterministic" in split


def test_the_typical_point_is_valid_for_4096_cubed():
    assert FAM.invalid(TYPICAL, P4K, LIM) is None


@pytest.mark.parametrize("over, p, words", [
    (dict(SCHEDULE="cooperative", TILE_M=64), P4K, "TILE_M >= 128"),
    (dict(SCHEDULE="pingpong", TILE_M=128, TILE_N=256), P4K, "accumulators"),
    (dict(TILE_M=256, TILE_N=256), P4K, "accumulators"),
    (dict(SCHEDULE="pingpong", TILE_M=64, SCHEDULER="streamk"), Problem(128, 4096, 4096), "stream-K"),
    (dict(CLUSTER_M=2, CLUSTER_N=2), P4K, "at most 2"),
    ({}, Problem(4096, 4100, 4096), "multiple of 8"),
    (dict(STAGES=5), P4K, "shared memory"),
    (dict(TILE_K=128), P4K, "stages"),
    (dict(STAGES=4), P4K, "duplicate"),                       # 4 is what auto picks for 128x256x64
    (dict(TILE_M=256, TILE_N=128, CLUSTER_M=1), Problem(64, 4096, 4096), "far larger than M"),
    (dict(TILE_N=256, CLUSTER_M=1), Problem(4096, 64, 4096), "far larger than N"),
    (dict(TILE_K=128, TILE_N=128, CLUSTER_M=1), Problem(1024, 1024, 64), "TILE_K"),
    (dict(CLUSTER_M=2), Problem(128, 4096, 4096), "idle CTA"),
    (dict(SWIZZLE=8, CLUSTER_M=1), Problem(256, 4096, 4096), "SWIZZLE=8 acts as"),
    (dict(RASTER="N", CLUSTER_M=1, SWIZZLE=1), Problem(128, 4096, 4096), "raster"),
    (dict(SCHEDULER="streamk"), P4K, "data-parallel"),       # 3.9 waves: no tail worth splitting
    (dict(SPLIT_K=4, CLUSTER_M=1, RASTER="M", SWIZZLE=1), Problem(128, 512, 16384), "SCHEDULER=streamk"),
    (dict(SCHEDULER="streamk", SPLIT_K=16, CLUSTER_M=1, RASTER="M", SWIZZLE=1), Problem(128, 512, 1024),
     "fewer than 2 k-tiles"),
])
def test_invalid_points_are_rejected_with_a_reason(over, p, words):
    why = FAM.invalid(point(**over), p, LIM)
    assert why is not None and words in why, why


def test_smaller_devices_shrink_the_space():
    assert FAM.invalid(TYPICAL, P4K, Limits(smem_per_block=160 * 1024)) is not None
    assert FAM.invalid(TYPICAL, P4K, Limits(cc=(8, 0))) is not None


# SharedStorageSize and stage counts of GemmUniversal kernels, read from CUTLASS 4.2 at compile time
# (fp16 TN, void C, fp32 accumulators): (TILE_M, TILE_N, TILE_K, SCHEDULE, STAGES) -> (bytes, stages).
MEASURED = {
    (128, 256, 64, "cooperative", 0): (214016, 4), (256, 128, 64, "cooperative", 0): (214016, 4),
    (128, 128, 64, "cooperative", 0): (214016, 6), (128, 192, 64, "cooperative", 0): (222208, 5),
    (256, 64, 64, "cooperative", 0): (222208, 5), (128, 64, 64, "cooperative", 0): (214016, 8),
    (128, 128, 128, "cooperative", 0): (214016, 3), (128, 128, 64, "pingpong", 0): (205824, 6),
    (64, 256, 64, "pingpong", 0): (214016, 5), (64, 128, 64, "pingpong", 0): (230400, 9),
    (64, 64, 64, "pingpong", 0): (222208, 13), (64, 192, 64, "pingpong", 0): (205824, 6),
    (64, 128, 128, "pingpong", 0): (205824, 4), (128, 64, 64, "pingpong", 0): (230400, 9),
    (128, 256, 64, "cooperative", 4): (214016, 4), (128, 128, 64, "pingpong", 5): (173056, 5),
}


def test_shared_memory_model_matches_cutlass():
    for (tm, tn, tk, sched, st), (smem, stages) in MEASURED.items():
        x = point(TILE_M=tm, TILE_N=tn, TILE_K=tk, SCHEDULE=sched, STAGES=st)
        assert FAM.stages(x) == stages, (tm, tn, tk, sched, st)
        assert 0 <= FAM.smem_bytes(x) - smem <= 512, (tm, tn, tk, sched, st, FAM.smem_bytes(x))


def test_prior_prefers_big_tiles_and_clusters_at_4096_cubed():
    ranked = sorted(FAM.valid_points(P4K, LIM), key=lambda x: -FAM.prior(x, P4K, LIM))
    for top in ranked[:5]:
        assert top["TILE_M"] >= 128 and top["TILE_M"] * top["TILE_N"] >= 128 * 128 and top["TILE_K"] == 64
        assert top["CLUSTER_M"] * top["CLUSTER_N"] == 2 and top["SCHEDULER"] == "persistent" and top["STAGES"] == 0
    small = point(TILE_M=64, TILE_N=64, SCHEDULE="pingpong", CLUSTER_M=1)
    assert FAM.invalid(small, P4K, LIM) is None
    assert FAM.prior(TYPICAL, P4K, LIM) > FAM.prior(small, P4K, LIM)
    assert FAM.prior(TYPICAL, P4K, LIM) > FAM.prior(point(TILE_N=128, TILE_K=128), P4K, LIM)


def test_prior_prefers_filling_the_sms_for_small_m():
    p = Problem(128, 4096, 4096)       # 128x256 tiles: only 16 of 132 SMs busy; 64x64 tiles: 128
    big = point(CLUSTER_M=1, RASTER="M", SWIZZLE=1)
    small = point(TILE_M=64, TILE_N=64, SCHEDULE="pingpong", CLUSTER_M=1, RASTER="M", SWIZZLE=1)
    assert FAM.invalid(big, p, LIM) is None and FAM.invalid(small, p, LIM) is None
    assert FAM.prior(small, p, LIM) > FAM.prior(big, p, LIM)


def test_prior_prefers_split_k_when_few_tiles_share_a_long_k():
    p = Problem(128, 512, 16384)       # 128x128 tiles: 4 output tiles for 132 SMs, 256 k-tiles each
    flat = point(TILE_N=128, CLUSTER_M=1, RASTER="M", SWIZZLE=1)
    split = {**flat, "SCHEDULER": "streamk", "SPLIT_K": 16}
    assert FAM.invalid(flat, p, LIM) is None and FAM.invalid(split, p, LIM) is None
    assert FAM.prior(split, p, LIM) > FAM.prior(flat, p, LIM)
    # ...and not when the output tiles already fill the GPU many times over.
    assert FAM.prior(TYPICAL, P4K, LIM) > FAM.prior({**TYPICAL, "SCHEDULER": "streamk", "SPLIT_K": 2}, P4K, LIM)


def test_points_recorded_before_split_k_existed_still_mutate():
    old = {k: v for k, v in TYPICAL.items() if k != "SPLIT_K"}
    assert all(set(nb) == set(FAM.space) for nb in FAM.neighbors(old))


def test_space_is_modest_and_neighbors_stay_inside():
    valid = FAM.valid_points(P4K, LIM)
    assert 0 < len(valid) < 0.15 * len(FAM.points())
    for nb in FAM.neighbors(TYPICAL):
        assert all(nb[k] in FAM.space[k] for k in FAM.space)


# One real build of a typical point. It takes about 50 s on a 2-core machine (nvcc's host and
# device passes over the CUTLASS/CuTe headers dominate; ptxas itself takes well under a second).
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.skipif(cutlass_include() is None, reason="CUTLASS headers (nvidia-cutlass wheel) not installed")
def test_one_real_build_of_a_typical_point(cfg):
    r = build(FAM.render(TYPICAL, P4K), cfg.build)
    assert r.ok, r.reason + "\n" + r.log[-3000:]
    (entry,) = [v for k, v in r.resources.items() if "GemmUniversal" in k]
    assert entry["spill_stores"] == 0 and entry["stack"] == 0
    assert re.search(r"sm_90a", next(iter(r.resources)))
