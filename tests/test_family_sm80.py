"""The sm80 family (mma.sync + ldmatrix + cp.async pipeline): renders policy-clean contract-v2 files
(device code plus a launch spec that parses and resolves), rejects impossible points with a reason,
builds with nvcc, and its prior prefers filling the GPU."""

import json
import random
import re
import shutil
import subprocess

import pytest

from cudal2.config import BuildConfig
from cudal2.harness import launch, policy
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


def test_render_has_no_host_code():
    for p, params in (SUBSET[0], SUBSET[4]):
        code = policy.strip_comments_and_strings(FAM.render(params, p))
        assert not re.search(r"cudal2_gemm|cudal2_workspace_bytes|<<<|cudaFuncSetAttribute|static\s+bool|cudaStream_t",
                             code)


def _signature(src: str, name: str) -> str:
    m = re.search(r'extern "C" __global__ void __launch_bounds__\([^)]*\)\s*' + name + r"\(([^)]*)\)", src)
    assert m, f"no extern \"C\" __global__ {name}"
    return re.sub(r"\s+", " ", m.group(1).replace("__restrict__ ", ""))


def test_single_split_kernel_takes_a_b_c():
    p, params = SUBSET[0]
    src = FAM.render(params, p)
    assert _signature(src, "sm80_hgemm") == "const __half* A, const __half* B, __half* C"
    assert "splitk_reduce" not in src


def test_split_k_kernels_take_partials_from_the_workspace():
    p, params = SUBSET[4]
    src = FAM.render(params, p)
    assert _signature(src, "sm80_hgemm") == "const __half* A, const __half* B, float* partials"
    assert _signature(src, "splitk_reduce") == "const float* partials, __half* C"


def test_kernels_are_outside_the_anonymous_namespace():
    p, params = SUBSET[4]
    src = FAM.render(params, p)
    closed = src.index("}  // namespace")
    assert closed < src.index('extern "C" __global__')
    assert src.count("namespace {") == 1 and src.count("}  // namespace") == 1


def test_single_split_launch_spec_is_one_kernel_without_workspace():
    p, params = SUBSET[0]
    d = FAM.context(params, p)
    spec = launch.parse(FAM.render(params, p))
    assert spec.workspace_bytes(p.M, p.N, p.K) == 0 and spec.m_tiles == [params["BM"]]
    [k] = spec.resolve(p.M, p.N, p.K)
    assert (k.name, k.grid, k.block, k.smem) == ("sm80_hgemm", (d["TILES_M"] * d["TILES_N"], 1, 1),
                                                 (d["THREADS"], 1, 1), d["SMEM_BYTES"])
    assert [a for a, _ in k.args] == ["A", "B", "C"]


def test_split_k_launch_spec_is_gemm_then_reduce_over_the_partials():
    p, params = SUBSET[4]
    d = FAM.context(params, p)
    spec = launch.parse(FAM.render(params, p))
    assert spec.workspace_bytes(p.M, p.N, p.K) == params["SPLIT_K"] * p.M * p.N * 4
    gemm, red = spec.resolve(p.M, p.N, p.K)
    assert (gemm.name, gemm.grid, gemm.smem) == ("sm80_hgemm", (d["TILES_M"] * d["TILES_N"], params["SPLIT_K"], 1),
                                                 d["SMEM_BYTES"])
    assert gemm.args == [("A", None), ("B", None), ("ws", 0)]
    assert (red.name, red.grid, red.block) == ("splitk_reduce", (-(-p.M * p.N // 2048), 1, 1), (256, 1, 1))
    assert red.args == [("ws", 0), ("C", None)]


def _sample(n_per_shape: int = 6, seed: int = 0):
    """SUBSET plus a seeded random draw of valid points over a few shapes (split-K among them)."""
    rng = random.Random(seed)
    out = list(SUBSET)
    for p in (BIG, EDGE, SKINNY, Problem(64, 64, 64), Problem(1, 4096, 1024)):
        valid = FAM.valid_points(p, LIM)
        out += [(p, x) for x in rng.sample(valid, n_per_shape)]
        out += [(p, x) for x in rng.sample([x for x in valid if x["SPLIT_K"] > 1] or valid, 1)]
    return out


def test_every_sampled_render_has_a_launch_spec_that_resolves_for_its_shape():
    for p, params in _sample():
        spec = launch.parse(FAM.render(params, p))
        assert spec is not None, (p, params)
        names = [k.name for k in spec.resolve(p.M, p.N, p.K)]
        assert names == (["sm80_hgemm", "splitk_reduce"] if params["SPLIT_K"] > 1 else ["sm80_hgemm"]), (p, params)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_a_render_compiles_to_a_cubin_whose_entries_are_the_spec_kernels(tmp_path):
    p, params = SUBSET[4]                                # split-K: both kernels
    src = FAM.render(params, p)
    (tmp_path / "k.cu").write_text(src)
    r = subprocess.run(["nvcc", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17",
                        "--expt-relaxed-constexpr", "-Xptxas", "-v", "-o", "k.cubin", "k.cu"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "k.cubin").read_bytes()[:4] == b"\x7fELF"
    entries = set(re.findall(r"Compiling entry function '(\w+)'", r.stdout + r.stderr))
    assert entries == {k.name for k in launch.parse(src).kernels} == {"sm80_hgemm", "splitk_reduce"}


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
