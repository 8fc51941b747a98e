"""The sm90raw family (raw-PTX wgmma + TMA + mbarrier, warp-specialized, persistent): renders
policy-clean contract-v2 files whose launch spec asks for the right tensor maps, grid and cluster,
rejects impossible points with a reason, and a few points build for sm_90a with no spills and with
HGMMA instructions in the cubin. Nothing here runs on a GPU (eval/sm90raw_check.py does)."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from cudal2.config import BuildConfig
from cudal2.harness import launch, policy
from cudal2.harness.build import build
from cudal2.kernels.family import Limits, get_family
from cudal2.kernels.sm90raw import Sm90Raw
from cudal2.problem import Problem, parse_claim

FAM = Sm90Raw()
LIM = Limits()
BIG, EDGE, SKINNY = Problem(4096, 4096, 4096), Problem(257, 135, 1032), Problem(64, 4096, 4096)


def point(**kw) -> dict:
    base = dict(BM=128, BN=256, CONSUMERS=2, STAGES=4, GROUP_M=8, EPI="direct", CLUSTER=1, MAX_CTAS=132)
    assert set(kw) <= set(base)
    return {**base, **kw}


# One of each structural variant: 1-3 consumer warpgroups of 64 or 128 rows, odd BN, both
# epilogues, clusters, and shapes that divide their tiles and shapes that do not (odd N, M and K tails).
SUBSET = [
    (BIG, point()),
    (BIG, point(BN=208)),
    (BIG, point(BM=256, BN=128)),
    (BIG, point(BM=192, CONSUMERS=3, BN=160, STAGES=4)),
    (BIG, point(STAGES=3, EPI="tma", CLUSTER=2)),
    (BIG, point(BN=160, EPI="tma", STAGES=3)),
    (EDGE, point(BN=128, STAGES=3)),
    (EDGE, point(BM=64, BN=64, CONSUMERS=1, CLUSTER=2, STAGES=4)),
    (Problem(333, 1000, 200), point(BN=112, EPI="tma", CLUSTER=2, STAGES=3)),
    (SKINNY, point(BM=64, CONSUMERS=1, BN=128, STAGES=6, EPI="tma")),
]
IDS = [f"{p}-{i}" for i, (p, _) in enumerate(SUBSET)]


def test_family_is_registered():
    assert get_family("sm90raw").name == "sm90raw"


@pytest.mark.parametrize("p,params", SUBSET, ids=IDS)
def test_subset_points_are_valid(p, params):
    assert FAM.invalid(params, p, LIM) is None


@pytest.mark.parametrize("p,params", SUBSET, ids=IDS)
def test_rendered_source_passes_policy(p, params):
    src = FAM.render(params, p)
    assert policy.check(src) == [] and policy.check_device_only(src) == []


def test_rendered_source_declares_its_shape_and_names_family_and_params():
    p, params = SUBSET[6]
    src = FAM.render(params, p)
    assert parse_claim(src).covers(p) and f"// cudal2-shapes: {p.M}x{p.N}x{p.K}" in src
    head = src.split("#include")[0]
    assert '"sm90raw"' in head and json.dumps(params, sort_keys=True) in head


def test_render_has_no_host_code():
    for p, params in (SUBSET[0], SUBSET[4]):
        code = policy.strip_comments_and_strings(FAM.render(params, p))
        assert not re.search(r"cudal2_gemm|cudal2_workspace_bytes|<<<|cudaFuncSetAttribute|static\s+bool|cudaStream_t"
                             r"|cuTensorMapEncode", code)


def test_comments_name_the_techniques():
    src = FAM.render(SUBSET[4][1], SUBSET[4][0])
    for word in ("TMA", "mbarrier", "setmaxnreg", "wgmma", "persistent", "grouped", "multicast", "stmatrix",
                 "128-byte swizzle"):
        assert word in src, word


def _signature(src: str) -> str:
    m = re.search(r'extern "C" __global__ void __launch_bounds__\([^)]*\)\s*sm90raw_hgemm\(([^)]*)\)', src)
    assert m, 'no extern "C" __global__ sm90raw_hgemm'
    return re.sub(r"\s+", " ", m.group(1).replace("__restrict__ ", ""))


def test_direct_epilogue_kernel_takes_two_tensor_maps_and_c():
    assert _signature(FAM.render(SUBSET[0][1], SUBSET[0][0])) == (
        "const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, __half* C")


def test_tma_epilogue_kernel_takes_three_tensor_maps():
    assert _signature(FAM.render(SUBSET[4][1], SUBSET[4][0])) == (
        "const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, "
        "const __grid_constant__ CUtensorMap tmC")


def test_kernel_is_outside_the_anonymous_namespace():
    src = FAM.render(SUBSET[0][1], SUBSET[0][0])
    assert src.index("}  // namespace") < src.index('extern "C" __global__')
    assert src.count("namespace {") == 1 and src.count("}  // namespace") == 1


@pytest.mark.parametrize("p,params", SUBSET, ids=IDS)
def test_launch_spec_is_one_persistent_kernel_with_the_family_numbers(p, params):
    d = FAM.context(params, p)
    spec = launch.parse(FAM.render(params, p))
    assert spec.workspace_bytes(p.M, p.N, p.K) == 0 and spec.m_tiles == [params["BM"]]
    [k] = spec.resolve(p.M, p.N, p.K)
    CL = params["CLUSTER"]
    assert (k.name, k.block, k.smem, k.cluster) == ("sm90raw_hgemm", (d["THREADS"], 1, 1), d["SMEM_BYTES"], (CL, 1, 1))
    assert k.grid == (d["GRID"], 1, 1) and d["GRID"] <= min(LIM.sm_count, d["ITEMS"] * CL) and d["GRID"] % CL == 0
    want = [("tmap", ("A", (64, params["BM"]), 128)), ("tmap", ("B", (64, params["BN"] // CL), 128))]
    if params["EPI"] == "tma":
        want.append(("tmap", ("C", (d["EPI_COLS"], d["WG_M"]), 2 * d["EPI_COLS"])))
    else:
        want.append(("C", None))
    assert k.args == want
    assert d["SMEM_BYTES"] <= LIM.smem_per_block


def test_every_sampled_render_has_a_launch_spec_that_resolves_for_its_shape():
    import random
    rng = random.Random(0)
    for p in (BIG, EDGE, SKINNY, Problem(1, 4096, 1024), Problem(12288, 12288, 512), Problem(8, 8, 8)):
        valid = FAM.valid_points(p, LIM)
        assert valid, p
        for x in rng.sample(valid, min(8, len(valid))):
            ks = launch.parse(FAM.render(x, p)).resolve(p.M, p.N, p.K)
            # split-K / stream-K points add the reduction (tests/test_sm90raw_splitk.py), hybrid points
            # clear their flags first (tests/test_sm90raw_hybrid.py)
            want = {"tiles": ["sm90raw_hgemm"], "streamk": ["sm90raw_hgemm", "sm90raw_reduce"],
                    "hybrid": ["sm90raw_clear", "sm90raw_hgemm"], "pingpong": ["sm90raw_hgemm"]}[x["SCHED"]]
            if x["SPLIT_K"] > 1:
                want = ["sm90raw_hgemm", "sm90raw_reduce"]
            assert [k.name for k in ks] == want, (p, x)


# ---- invalid: each rule with its reason ---------------------------------------------------------
def test_invalid_rejects_a_point_over_the_smem_limit():
    reason = FAM.invalid(point(BM=256, BN=192, STAGES=5), BIG, LIM)       # 5 x 56 KiB
    assert reason and "shared memory" in reason


def test_invalid_rejects_a_tma_epilogue_that_leaves_no_room_for_stages():
    reason = FAM.invalid(point(EPI="tma", STAGES=4), BIG, LIM)            # 4 x 48 KiB + 64 KiB of staging
    assert reason and "shared memory" in reason


def test_invalid_rejects_consumer_rows_that_are_not_wgmma_tiles():
    reason = FAM.invalid(point(BM=192, CONSUMERS=2), BIG, LIM)            # 96 rows per consumer
    assert reason and "64 or 128 rows" in reason


def test_invalid_rejects_too_many_accumulators():
    reason = FAM.invalid(point(BM=256, BN=256), BIG, LIM)                 # 128 x 256 per warpgroup
    assert reason and "accumulators" in reason


def test_invalid_rejects_a_wgmma_above_the_kernel_register_target():
    reason = FAM.invalid(point(BM=192, CONSUMERS=3, BN=208), BIG, LIM)    # 512 threads: 128 registers
    assert reason and "register" in reason and "m64n208k16" in reason


def test_invalid_rejects_a_tma_epilogue_for_odd_n():
    reason = FAM.invalid(point(BN=128, STAGES=3, EPI="tma"), EDGE, LIM)   # N = 135: rows of 270 bytes
    assert reason and "N % 8" in reason


def test_invalid_rejects_a_cluster_over_a_single_tile_row():
    reason = FAM.invalid(point(BM=128, BN=128, CLUSTER=2), Problem(100, 4096, 4096), LIM)
    assert reason and "CLUSTER" in reason


def test_invalid_rejects_a_tile_far_larger_than_the_problem():
    reason = FAM.invalid(point(BM=256, BN=128), Problem(16, 4096, 4096), LIM)
    assert reason and "far larger" in reason


def test_invalid_rejects_a_grid_cap_that_changes_nothing():
    reason = FAM.invalid(point(BN=128, MAX_CTAS=128), Problem(1024, 1024, 1024), LIM)   # 64 tiles
    assert reason and "MAX_CTAS" in reason


def test_invalid_rejects_stages_the_run_never_fills():
    reason = FAM.invalid(point(BN=128, STAGES=6), Problem(128, 128, 128), LIM)          # 2 k tiles
    assert reason and "never fills" in reason


# ---- builds -------------------------------------------------------------------------------------
def _cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for d in sys.path:   # the nvidia-cuda-cuobjdump wheel puts it under site-packages/nvidia/*/bin
        hits = glob.glob(os.path.join(d, "nvidia", "*", "bin", "cuobjdump"))
        if hits:
            return hits[0]
    return None


def build_clean(p: Problem, params: dict, tmp_path):
    """Build a valid point for sm_90a; assert one kernel, no spills and no stack. The build result."""
    assert FAM.invalid(params, p, LIM) is None
    r = build(FAM.render(params, p), BuildConfig(cache_dir=str(tmp_path), archs=list(FAM.build_archs)))
    assert r.ok, r.reason
    [(entry, res)] = r.resources.items()
    assert entry.startswith("sm90raw_hgemm") and res["spill_stores"] == 0 and res["stack"] == 0
    return r


BUILDS = [
    (BIG, point()),                                                        # 128x256, direct epilogue
    (EDGE, point(BM=256, BN=192, STAGES=3)),                          # 2 x m64 per consumer, M/N/K tails, odd N
    (BIG, point(STAGES=3, EPI="tma", CLUSTER=2)),                          # multicast + stmatrix/TMA store
]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("p,params", BUILDS, ids=["4096cubed", "257x135x1032-256x192", "cluster2-tma"])
def test_valid_point_builds_without_spills_and_uses_hgmma(p, params, tmp_path):
    r = build_clean(p, params, tmp_path)
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not found: resources checked, SASS not")
    sass = subprocess.run([tool, "-sass", r.lib_path], capture_output=True, text=True, timeout=120).stdout
    assert f"HGMMA.64x{params['BN']}x16.F32" in sass
    assert "UTMALDG.2D" in sass and "LDL" not in sass and "STL" not in sass
    if params["CLUSTER"] > 1:
        assert "UTMALDG.2D.MULTICAST" in sass
    if params["EPI"] == "tma":
        assert "STSM" in sass and "UTMASTG.2D" in sass


# ---- prior --------------------------------------------------------------------------------------
def test_prior_prefers_a_big_two_consumer_tile_at_4096_cubed():
    big, small = point(BN=256), point(BM=64, BN=64, CONSUMERS=1)
    assert FAM.invalid(small, BIG, LIM) is None
    assert FAM.prior(big, BIG, LIM) > FAM.prior(small, BIG, LIM)


def test_prior_favourite_at_4096_cubed_fills_every_sm():
    best = max(FAM.valid_points(BIG, LIM), key=lambda x: FAM.prior(x, BIG, LIM))
    assert FAM.context(best, BIG)["GRID"] >= LIM.sm_count - 4
