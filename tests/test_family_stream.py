"""The stream family (M <= 16: a GEMV fed by bulk copies into a shared-memory ring): renders
policy-clean contract-v2 files whose launch spec carries the family's own numbers, its partition
gives every unit to exactly one CTA, it rejects impossible or wasteful points with a reason, and a
few points build for sm_90a with no spills and no local memory. Nothing here runs on a GPU
(eval/skinny_check.py --family stream does)."""

import shutil

import pytest

from cudal2.config import BuildConfig
from cudal2.harness import launch, policy
from cudal2.harness.build import build
from cudal2.kernels.family import Limits, get_family
from cudal2.kernels.stream import Stream
from cudal2.problem import Problem, parse_claim

FAM = Stream()
LIM = Limits()
DECODE, MLP, DOWN, ODD = Problem(1, 4096, 4096), Problem(16, 14336, 4096), Problem(1, 4096, 14336), Problem(9, 1001, 1000)


def point(**kw) -> dict:
    base = dict(ROWS=8, KC=1024, STAGES=4, WARPS=4, A_RES=1, SPLIT_ROWS=1, GRID=132, KSPLIT=1)
    assert set(kw) <= set(base)
    return {**base, **kw}


SUBSET = [
    (DECODE, point()),                                                  # cut row blocks: the fix-up
    (DECODE, point(ROWS=32, KC=512, STAGES=6, SPLIT_ROWS=0)),
    (MLP, point(ROWS=16, KC=512, STAGES=2)),
    (DOWN, point(KC=512, STAGES=4, SPLIT_ROWS=0, GRID=264)),
    (ODD, point(ROWS=16, KC=512, STAGES=2, A_RES=0)),                   # A copied per stage, every tail
    (Problem(3, 17, 24), point(KC=512, STAGES=2, SPLIT_ROWS=0)),
    # k split over 4-CTA clusters: N, M and K tails, the last chunk's slices past K for ranks 1-3
    (Problem(13, 1001, 4104), point(ROWS=16, KC=1024, STAGES=3, A_RES=0, SPLIT_ROWS=0, KSPLIT=4)),
]
KSPLIT_POINT = SUBSET[-1]
IDS = [f"{p}-{i}" for i, (p, _) in enumerate(SUBSET)]


def test_family_is_registered():
    assert get_family("stream").name == "stream"


@pytest.mark.parametrize("p,params", SUBSET, ids=IDS)
def test_subset_points_are_valid_and_render_policy_clean(p, params):
    assert FAM.invalid(params, p, LIM) is None
    src = FAM.render(params, p)
    assert policy.check(src) == [] and policy.check_device_only(src) == []
    assert parse_claim(src).covers(p) and not parse_claim(src).covers(Problem(p.M, p.N + 1, p.K))


@pytest.mark.parametrize("p,params", SUBSET, ids=IDS)
def test_launch_spec_carries_the_family_numbers(p, params):
    d = FAM.context(params, p)
    kernels = launch.parse(FAM.render(params, p)).resolve(p.M, p.N, p.K)
    gemv = kernels[0]
    assert (gemv.name, gemv.grid, gemv.block, gemv.smem) == ("stream_gemv", (d["CTAS"] * params["KSPLIT"], 1, 1),
                                                            (32 * (params["WARPS"] + 1), 1, 1), d["SMEM_BYTES"])
    assert gemv.cluster == (params["KSPLIT"], 1, 1)
    if d["FIXUP"]:
        assert [k.name for k in kernels] == ["stream_gemv", "stream_fixup"]
        assert gemv.args[-1] == ("ws", 0) and kernels[1].args == [("ws", 0), ("C", None)]
    else:
        assert len(kernels) == 1 and [a for a, _ in gemv.args] == ["A", "B", "C"]
    assert d["SMEM_BYTES"] <= LIM.smem_per_block


@pytest.mark.parametrize("p,params", [(Problem(1, N, K), point(ROWS=r, KC=kc, SPLIT_ROWS=s, GRID=g))
                                      for N, K in ((4096, 4096), (1001, 1000), (152064, 3584), (24, 8))
                                      for r in (8, 32) for kc in (512, 4096) for s in (0, 1) for g in (132, 264)],
                         ids=str)
def test_the_partition_gives_every_unit_to_one_cta_and_says_when_blocks_are_cut(p, params):
    d = FAM.context(params, p)
    nkc, ctas, units = d["NKC"], d["CTAS"], d["UNITS"]
    first = [c * units // ctas if params["SPLIT_ROWS"] else c * d["NRB"] // ctas * nkc for c in range(ctas + 1)]
    assert first[0] == 0 and first[-1] == units and all(a < b for a, b in zip(first, first[1:]))
    assert d["FIXUP"] == any(f % nkc for f in first[1:-1])
    assert d["FIXUP"] <= bool(params["SPLIT_ROWS"])        # whole row blocks are never cut


@pytest.mark.parametrize("p", [Problem(M, N, K) for M in (1, 8, 9, 16)
                               for N, K in ((8, 8), (13, 24), (1000, 512), (4096, 8), (1001, 1000),
                                            (14336, 4096), (4096, 28672))], ids=str)
def test_every_shape_with_m_up_to_16_keeps_a_valid_point(p):
    assert FAM.invalid(point(KC=512, STAGES=2, A_RES=0, SPLIT_ROWS=0), p, LIM) is None


@pytest.mark.parametrize("p,params,says", [
    (Problem(17, 4096, 4096), point(), "M <= 16"),
    (Problem(16, 4096, 14336), point(), "shared memory"),             # all of A kept: 458 KB
    (DECODE, point(STAGES=4, GRID=264, KC=4096), "shared memory"),    # two CTAs of 4 x 64 KB stages
    (Problem(1, 64, 4096), point(GRID=264), "adds nothing"),
    (Problem(1, 256, 1024), point(STAGES=6), "never fill"),
    (Problem(1, 4096, 512), point(KC=2048), "mostly empty"),
    (Problem(16, 1024, 4096), point(KSPLIT=2), "A_RES=0"),
    (Problem(16, 1024, 4096), point(KC=1024, A_RES=0, SPLIT_ROWS=0, KSPLIT=4, ROWS=16, STAGES=2), None),
    (Problem(1, 128256, 4096), point(A_RES=0, SPLIT_ROWS=0, KSPLIT=2), "already give every SM work"),
    (Problem(16, 1024, 264), point(KC=512, A_RES=0, SPLIT_ROWS=0, KSPLIT=4, STAGES=2), "no k at all"),
])
def test_invalid_says_why(p, params, says):
    reason = FAM.invalid(params, p, LIM)
    assert (reason is None) if says is None else (reason and says in reason), reason


def test_a_k_split_grid_has_no_more_clusters_than_are_resident():
    # 64 row blocks of 16 on 132 CTAs in clusters of 4 would be 32 clusters; the H100 holds 30 at
    # once (one GPC each), so two would wait a whole wave: the grid deals them to 22 resident ones
    p, x = Problem(16, 1024, 4096), point(KC=1024, A_RES=0, SPLIT_ROWS=0, KSPLIT=4, ROWS=16, STAGES=2)
    d = FAM.context(x, p)
    assert d["NRB"] == 64 and d["CTAS"] <= LIM.resident_clusters(4, 1) and d["CTAS"] == 22
    # clusters of 2 are all resident (66), so the grid is what it was: 64 blocks, one each
    assert FAM.context(dict(x, KSPLIT=2), p)["CTAS"] == 64


def test_prior_charges_the_fix_up_launch():
    # same bytes, same copies: the point whose row blocks are cut pays one more launch
    cut, whole = point(SPLIT_ROWS=1), point(SPLIT_ROWS=0)
    assert FAM.context(cut, DECODE)["FIXUP"] and not FAM.context(whole, DECODE)["FIXUP"]
    assert FAM.prior(cut, DECODE, LIM) < FAM.prior(whole, DECODE, LIM)


def test_prior_prefers_a_k_split_where_b_has_few_row_blocks():
    # 16x1024x4096: 32 row blocks of 32 rows; with copies of the same size (2 KB a row), a 4-CTA
    # split streams them on 64 SMs (16 resident clusters, two blocks each), not 32, each CTA
    # copying a quarter of the rows' bytes and of A
    p = Problem(16, 1024, 4096)
    one = point(ROWS=32, KC=1024, STAGES=2, A_RES=0, SPLIT_ROWS=0)
    split = point(ROWS=32, KC=4096, STAGES=2, A_RES=0, SPLIT_ROWS=0, KSPLIT=4)
    assert FAM.invalid(one, p, LIM) is None and FAM.invalid(split, p, LIM) is None
    assert FAM.prior(split, p, LIM) > FAM.prior(one, p, LIM)


def test_an_entry_without_ksplit_reads_as_one():
    old = {k: v for k, v in point(SPLIT_ROWS=0).items() if k != "KSPLIT"}
    assert FAM.context(old, DECODE) == FAM.context(point(SPLIT_ROWS=0), DECODE)


def test_prior_charges_small_copies():
    assert FAM.prior(point(KC=512, STAGES=6), MLP, LIM) < FAM.prior(point(KC=2048, STAGES=2), MLP, LIM)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("p,params", [SUBSET[0], SUBSET[4], KSPLIT_POINT], ids=["fixup", "a-per-stage-odd", "ksplit4"])
def test_valid_point_builds_without_spills_or_local_memory(p, params, tmp_path):
    r = build(FAM.render(params, p), BuildConfig(cache_dir=str(tmp_path), archs=list(FAM.build_archs)))
    assert r.ok, r.reason
    entries = {k.split("@")[0]: v for k, v in r.resources.items()}
    assert set(entries) == ({"stream_gemv", "stream_fixup"} if FAM.context(params, p)["FIXUP"] else {"stream_gemv"})
    for res in entries.values():
        assert res["spill_stores"] == 0 and res["spill_loads"] == 0 and res["stack"] == 0


@pytest.mark.parametrize("n", [1024, 8192, 14336, 18944, 128256])
def test_whole_row_blocks_are_dealt_out_evenly(n):
    # no CTA streams more row blocks than GRID CTAs would, and the grid is the fewest that do that
    x = point(SPLIT_ROWS=0, GRID=264)
    d = FAM.context(x, Problem(1, n, 4096))
    most = -(-d["NRB"] // min(264, d["NRB"]))
    assert d["UNITS_PER_CTA_MAX"] == most * d["NKC"] and (d["CTAS"] - 1) * most < d["NRB"] <= d["CTAS"] * most
