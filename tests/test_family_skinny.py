"""The skinny family (M <= 16: a split-K GEMV on mma.sync that streams B once): renders policy-clean
contract-v2 files whose launch spec resolves to the family's own numbers, rejects M > 16 and other
impossible or wasteful points with a reason, and a few points build for sm_90a with no spills and no
local memory, streaming B with L1-bypassing 16-byte loads. Nothing here runs on a GPU
(eval/skinny_check.py does)."""

import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys

import pytest

from cudal2.config import BuildConfig
from cudal2.harness import launch, policy
from cudal2.harness.build import build
from cudal2.kernels.family import Limits, get_family
from cudal2.kernels.skinny import Skinny
from cudal2.problem import Problem, parse_claim

FAM = Skinny()
LIM = Limits()
DECODE, MLP, DOWN, VOCAB = Problem(1, 4096, 4096), Problem(16, 14336, 4096), Problem(16, 4096, 14336), Problem(1, 128256, 4096)
ODD = Problem(9, 1001, 1000)          # M > 8 but < 16, odd N, K % 32 == 8


def point(**kw) -> dict:
    base = dict(WARP_N=8, WARPS=4, SPLIT_K=1, UNROLL=2, A_SMEM=0)
    assert set(kw) <= set(base)
    return {**base, **kw}


# One of each structural variant: both warp layouts, 1/2/4 n-tiles per warp, 4 and 8 warps, split-K
# with its reduction kernel, every ring depth, M = 1 (one A half) and M > 8 (two), and shapes that
# divide everything or nothing.
SUBSET = [
    (DECODE, point()),
    (DECODE, point(WARP_N=16, WARPS=8, UNROLL=4)),
    (DECODE, point(WARP_N=16, SPLIT_K=4, UNROLL=4, A_SMEM=1)),
    (MLP, point(WARPS=8, UNROLL=4)),
    (MLP, point(WARP_N=32, UNROLL=4)),
    (DOWN, point(WARP_N=16, WARPS=8, SPLIT_K=8, UNROLL=8, A_SMEM=1)),
    (VOCAB, point(WARP_N=32, WARPS=8, A_SMEM=1)),
    (ODD, point(SPLIT_K=4, A_SMEM=1)),
    (ODD, point(WARPS=8, UNROLL=4)),
    (Problem(3, 17, 24), point()),
]
IDS = [f"{p}-{i}" for i, (p, _) in enumerate(SUBSET)]


def test_family_is_registered():
    assert get_family("skinny").name == "skinny"


@pytest.mark.parametrize("p,params", SUBSET, ids=IDS)
def test_subset_points_are_valid(p, params):
    assert FAM.invalid(params, p, LIM) is None


@pytest.mark.parametrize("p,params", SUBSET, ids=IDS)
def test_rendered_source_passes_policy(p, params):
    src = FAM.render(params, p)
    assert policy.check(src) == [] and policy.check_device_only(src) == []


def test_rendered_source_declares_its_shape_and_names_family_and_params():
    p, params = SUBSET[7]
    src = FAM.render(params, p)
    assert parse_claim(src).covers(p) and f"// cudal2-shapes: {p.M}x{p.N}x{p.K}" in src
    assert not parse_claim(src).covers(Problem(p.M + 1, p.N, p.K))
    head = src.split("#include")[0]
    assert '"skinny"' in head and json.dumps(params, sort_keys=True) in head


def test_render_has_no_host_code():
    for p, params in (SUBSET[0], SUBSET[5]):
        code = policy.strip_comments_and_strings(FAM.render(params, p))
        assert not re.search(r"cudal2_gemm|cudal2_workspace_bytes|<<<|cudaFuncSetAttribute|static\s+bool|cudaStream_t",
                             code)


def test_comments_name_the_techniques():
    src = FAM.render(SUBSET[5][1], SUBSET[5][0])
    for word in ("L1::no_allocate", "ld.global.nc", "register ring", "Little's law", "mma.sync", "k permutation",
                 "cp.async", "split-K", "no atomics", "fixed", "tails"):
        assert word in src, word


def _signature(src: str, name: str) -> str:
    m = re.search(r'extern "C" __global__ void __launch_bounds__\([^)]*\)\s*' + name + r"\(([^)]*)\)", src)
    assert m, f'no extern "C" __global__ {name}'
    return re.sub(r"\s+", " ", m.group(1).replace("__restrict__ ", ""))


def test_single_split_kernel_takes_a_b_c():
    src = FAM.render(SUBSET[0][1], SUBSET[0][0])
    assert _signature(src, "skinny_gemv") == "const __half* A, const __half* B, __half* C"
    assert "skinny_reduce" not in policy.strip_comments_and_strings(src)


def test_split_k_kernels_take_partials_from_the_workspace():
    src = FAM.render(SUBSET[2][1], SUBSET[2][0])
    assert _signature(src, "skinny_gemv") == "const __half* A, const __half* B, float* partials"
    assert _signature(src, "skinny_reduce") == "const float* partials, __half* C"


def test_kernels_are_outside_the_anonymous_namespace():
    src = FAM.render(SUBSET[2][1], SUBSET[2][0])
    assert src.index("}  // namespace") < src.index('extern "C" __global__')
    assert src.count("namespace {") == 1 and src.count("}  // namespace") == 1


@pytest.mark.parametrize("p,params", SUBSET, ids=IDS)
def test_launch_spec_carries_the_family_numbers(p, params):
    d = FAM.context(params, p)
    spec = launch.parse(FAM.render(params, p))
    S = params["SPLIT_K"]
    assert spec.workspace_bytes(p.M, p.N, p.K) == (S * p.M * p.N * 4 if S > 1 else 0)
    kernels = spec.resolve(p.M, p.N, p.K)
    gemv = kernels[0]
    assert (gemv.name, gemv.grid, gemv.block, gemv.smem) == ("skinny_gemv", (d["NGROUPS"], S, 1),
                                                            (32 * params["WARPS"], 1, 1), d["SMEM_BYTES"])
    assert d["NGROUPS"] * d["CTA_COLS"] >= p.N > (d["NGROUPS"] - 1) * d["CTA_COLS"]
    if S == 1:
        assert len(kernels) == 1 and [a for a, _ in gemv.args] == ["A", "B", "C"]
    else:
        red = kernels[1]
        assert gemv.args == [("A", None), ("B", None), ("ws", 0)]
        assert (red.name, red.grid, red.block) == ("skinny_reduce", (-(-p.M * p.N // 2048), 1, 1), (256, 1, 1))
        assert red.args == [("ws", 0), ("C", None)]
    assert 0 < d["SMEM_BYTES"] <= LIM.smem_per_block


def test_every_sampled_render_has_a_launch_spec_that_resolves_for_its_shape():
    rng = random.Random(0)
    for p in (DECODE, MLP, DOWN, VOCAB, ODD, Problem(16, 8, 8), Problem(1, 100000, 8), Problem(7, 257, 4104)):
        valid = FAM.valid_points(p, LIM)
        assert valid, p
        for x in rng.sample(valid, min(6, len(valid))):
            names = [k.name for k in launch.parse(FAM.render(x, p)).resolve(p.M, p.N, p.K)]
            assert names == (["skinny_gemv", "skinny_reduce"] if x["SPLIT_K"] > 1 else ["skinny_gemv"]), (p, x)


def _fallback(p: Problem) -> dict:
    """The point the family docstring promises is valid for every shape with M <= 16."""
    kb = -(-p.K // 32)
    split = max(s for s in FAM.space["SPLIT_K"] if s == 1 or s <= kb // 4)
    if -(-p.N // 8) >= 8 * LIM.sm_count:
        split = 1
    return point(SPLIT_K=split)


@pytest.mark.parametrize("p", [Problem(M, N, K) for M in (1, 8, 9, 16)
                               for N, K in ((8, 8), (13, 24), (64, 4096), (8, 65536), (1000, 512), (4096, 8),
                                            (1001, 1000), (8447, 4104), (8448, 4096), (14336, 4096))], ids=str)
def test_every_shape_with_m_up_to_16_keeps_a_valid_point(p):
    assert FAM.invalid(_fallback(p), p, LIM) is None


# ---- invalid: each rule with its reason ---------------------------------------------------------
def test_invalid_rejects_m_above_16():
    for params in FAM.points():
        reason = FAM.invalid(params, Problem(17, 4096, 4096), LIM)
        assert reason and "M <= 16" in reason
    assert FAM.valid_points(Problem(128, 4096, 4096), LIM) == []


def test_invalid_rejects_an_a_slice_over_the_smem_limit():
    reason = FAM.invalid(point(A_SMEM=1), DOWN, LIM)          # 448 blocks x 1 KiB of A fragments
    assert reason and "shared memory" in reason


def test_invalid_rejects_too_many_loads_in_flight():
    reason = FAM.invalid(point(WARP_N=32, UNROLL=8), VOCAB, LIM)   # 32 x 16-byte loads per thread
    assert reason and "in flight" in reason


def test_invalid_rejects_empty_splits():
    reason = FAM.invalid(point(SPLIT_K=4, A_SMEM=1), Problem(16, 4096, 64), LIM)   # 2 blocks of 32 k
    assert reason and "empty" in reason


def test_invalid_rejects_splits_that_leave_warps_idle():
    reason = FAM.invalid(point(WARPS=8, SPLIT_K=16), Problem(1, 4096, 2048), LIM)  # 4 blocks per split, 8 warps
    assert reason and "idle" in reason


def test_invalid_rejects_too_few_ctas():
    reason = FAM.invalid(point(WARP_N=32, WARPS=8, A_SMEM=1), DECODE, LIM)         # 16 CTAs of 256 rows
    assert reason and "too few CTAs" in reason


def test_invalid_rejects_split_k_where_row_groups_already_fill_the_gpu():
    reason = FAM.invalid(point(SPLIT_K=2), VOCAB, LIM)                              # 16032 row groups
    assert reason and "too many CTAs" in reason


def test_invalid_rejects_a_ring_that_never_fills():
    reason = FAM.invalid(point(WARPS=8, UNROLL=8), Problem(16, 4096, 1024), LIM)   # 4 blocks per warp
    assert reason and "never fills" in reason


def test_invalid_rejects_a_cta_far_wider_than_n():
    reason = FAM.invalid(point(WARP_N=32, WARPS=8, A_SMEM=1), Problem(1, 64, 4096), LIM)
    assert reason and "far more than N" in reason


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


BUILDS = [
    (MLP, point(WARP_N=32, UNROLL=4)),                                 # A through L1, 4 n-tiles, no masks
    (ODD, point(SPLIT_K=4, A_SMEM=1)),                                 # A in smem, split-K, every tail
    (DOWN, point(WARP_N=16, WARPS=8, SPLIT_K=8, UNROLL=8, A_SMEM=1)),   # the deepest ring
]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("p,params", BUILDS, ids=["mlp-l1", "odd-smem-splitk", "down-smem-ring8"])
def test_valid_point_builds_without_spills_or_local_memory(p, params, tmp_path):
    assert FAM.invalid(params, p, LIM) is None
    r = build(FAM.render(params, p), BuildConfig(cache_dir=str(tmp_path), archs=list(FAM.build_archs)))
    assert r.ok, r.reason
    entries = {k.split("@")[0]: v for k, v in r.resources.items()}
    assert set(entries) == ({"skinny_gemv", "skinny_reduce"} if params["SPLIT_K"] > 1 else {"skinny_gemv"})
    for res in entries.values():
        assert res["spill_stores"] == 0 and res["spill_loads"] == 0 and res["stack"] == 0
    # the family's register estimate is a budget, not a guess to within a factor
    assert entries["skinny_gemv"]["registers"] <= FAM.context(params, p)["REGS_EST"] + 16
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not found: resources checked, SASS not")
    sass = subprocess.run([tool, "-sass", r.lib_path], capture_output=True, text=True, timeout=120).stdout
    assert "LDG.E.NA.LTC256B.128.CONSTANT" in sass           # B: 16 bytes, no L1 allocation, 256 B L2 prefetch
    assert "HMMA.16816.F32" in sass and "LDL" not in sass and "STL" not in sass
    if params["A_SMEM"]:
        assert "LDGSTS.E.BYPASS.LTC128B.128" in sass or "LDGSTS" in sass


# ---- prior --------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [DECODE, MLP, DOWN, VOCAB], ids=str)
def test_prior_favourite_fills_every_sm(p):
    best = max(FAM.valid_points(p, LIM), key=lambda x: FAM.prior(x, p, LIM))
    assert FAM.context(best, p)["CTAS"] >= LIM.sm_count


def test_prior_prefers_split_k_when_row_groups_are_few():
    p = Problem(1, 1024, 16384)                       # 128 n-tiles: one short wave without split-K
    one, four = point(WARP_N=16, A_SMEM=0), point(WARP_N=16, SPLIT_K=4)
    assert FAM.invalid(four, p, LIM) is None
    assert FAM.prior(four, p, LIM) > FAM.prior(one, p, LIM)
