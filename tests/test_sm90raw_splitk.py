"""sm90raw split-K and stream-K (issue 12): the new points render contract-v2 files with two
launches (sm90raw_hgemm into the workspace, then sm90raw_reduce into C) and a declared workspace;
the rendered scheduler covers every (tile, k tile) once and writes each workspace slot once, and
the reduction reads exactly the slots written, inside the declared size (checked by compiling the
render's own scheduler functions and loop bounds on the host with g++); a few points build for
sm_90a with no spills; invalid combinations are refused with a reason; the prior picks split-K
for thin, long-K shapes. Nothing here runs on a GPU (eval/sm90raw_check.py does)."""

import re
import shutil
import subprocess

import pytest

from cudal2.config import BuildConfig
from cudal2.harness import launch, policy
from cudal2.harness.build import build
from cudal2.kernels.family import Limits
from cudal2.kernels.sm90raw import Sm90Raw
from cudal2.problem import Problem

FAM = Sm90Raw()
LIM = Limits()
THIN = Problem(128, 1024, 16384)                # 16 tiles of 64x128: 12% of the SMs without split-K
THIN_SHAPES = [THIN, Problem(64, 1024, 16384), Problem(128, 4096, 16384), Problem(512, 1024, 8192)]
EDGE = Problem(257, 135, 4104)                  # M, N and K tails, odd N (scalar C stores)


def point(**kw) -> dict:
    base = dict(BM=64, BN=128, CONSUMERS=1, STAGES=4, GROUP_M=8, EPI="direct", CLUSTER=1, MAX_CTAS=132,
                SPLIT_K=1, SCHED="tiles")
    assert set(kw) <= set(base)
    return {**base, **kw}


def uses_workspace(x: dict) -> bool:
    return x["SPLIT_K"] > 1 or x["SCHED"] == "streamk"


# ---- the space ----------------------------------------------------------------------------------
def test_new_parameters_default_to_the_old_kernel():
    assert FAM.space["SPLIT_K"][0] == 1 and FAM.space["SCHED"][0] == "tiles"
    old = {k: v for k, v in point(BM=128, BN=256, CONSUMERS=2).items() if k not in ("SPLIT_K", "SCHED")}
    body = lambda s: "\n".join(line for line in s.splitlines() if not line.startswith("// params:"))  # noqa: E731
    assert body(FAM.render(old, THIN)) == body(FAM.render(FAM.complete(old), THIN))
    assert "sm90raw_reduce" not in FAM.render(old, THIN)


@pytest.mark.parametrize("p", THIN_SHAPES, ids=str)
def test_split_k_points_exist_for_thin_long_k_shapes(p):
    splits = {x["SPLIT_K"] for x in FAM.valid_points(p, LIM) if x["SCHED"] == "tiles"}
    assert {2, 4, 8} <= splits


def test_small_tile_split_k_fills_the_sms_at_128x1024x16384():
    x = point(BN=64, SPLIT_K=4)                 # 2 x 16 tiles x 4 splits
    assert FAM.invalid(x, THIN, LIM) is None
    assert FAM.context(x, THIN)["GRID"] == 128


def test_prior_favourite_for_a_thin_long_k_shape_cuts_k_over_the_sms():
    # split-K, stream-K with either fix-up (the separate reduction or the hybrid's in-kernel one), or the
    # k split inside a cluster
    best = max(FAM.valid_points(THIN, LIM), key=lambda x: FAM.prior(x, THIN, LIM))
    d = FAM.context(best, THIN)
    cuts_k = best["SPLIT_K"] > 1 or best["SCHED"] != "tiles" or best["KSPLIT"] > 1
    assert cuts_k and d["TILES"] < LIM.sm_count <= d["GRID"] + 8


def test_prior_still_prefers_whole_tiles_at_4096_cubed():
    p = Problem(4096, 4096, 4096)
    best = max(FAM.valid_points(p, LIM), key=lambda x: FAM.prior(x, p, LIM))
    assert not uses_workspace(best)


# ---- invalid: each rule with its reason --------------------------------------------------------
def test_invalid_rejects_split_k_with_the_tma_epilogue():
    reason = FAM.invalid(point(SPLIT_K=4, EPI="tma"), THIN, LIM)
    assert reason and "EPI must be direct" in reason


def test_invalid_rejects_split_k_together_with_stream_k():
    reason = FAM.invalid(point(SPLIT_K=2, SCHED="streamk"), THIN, LIM)
    assert reason and "SPLIT_K must be 1" in reason


def test_invalid_rejects_splits_too_short_to_fill_the_pipeline():
    reason = FAM.invalid(point(SPLIT_K=8), Problem(128, 1024, 1024), LIM)     # 16 k tiles / 8
    assert reason and "never fills" in reason


def test_invalid_rejects_split_k_when_tiles_fill_the_sms_twice():
    reason = FAM.invalid(point(BM=128, BN=256, CONSUMERS=2, SPLIT_K=2), Problem(4096, 4096, 4096), LIM)
    assert reason and "fill" in reason and "twice" in reason


def test_invalid_rejects_stream_k_where_items_divide_evenly():
    reason = FAM.invalid(point(BM=128, BN=128, CONSUMERS=2, SCHED="streamk"), Problem(512, 4224, 4096), LIM)
    assert reason and "evenly" in reason                                        # 4 x 33 = 132 items


def test_invalid_rejects_an_unknown_split():
    reason = FAM.invalid(point(SPLIT_K=5), THIN, LIM)
    assert reason and "SPLIT_K=5" in reason


# ---- renders and launch specs ----------------------------------------------------------------------
def _ws_points(p: Problem) -> list[dict]:
    # GROUP_M and MAX_CTAS only change numbers, not the structure: one value each keeps this quick
    return [x for x in FAM.valid_points(p, LIM) if uses_workspace(x) and x["GROUP_M"] == 8 and x["MAX_CTAS"] == 132]


@pytest.mark.parametrize("p", [THIN, EDGE, Problem(333, 1000, 4096)], ids=str)
def test_every_new_point_renders_a_v2_spec_with_the_reduction_and_its_workspace(p):
    points = _ws_points(p)
    assert points
    for x in points:
        d = FAM.context(x, p)
        src = FAM.render(x, p)
        spec = launch.parse(src)
        assert spec.workspace_bytes(p.M, p.N, p.K) == d["WS_BYTES"] > 0, x
        main, red = spec.resolve(p.M, p.N, p.K)
        assert main.name == "sm90raw_hgemm" and main.args[-1] == ("ws", 0) and main.grid == (d["GRID"], 1, 1), x
        assert red.name == "sm90raw_reduce" and red.args == [("ws", 0), ("C", None)], x
        # the reduction's threads (8 elements each) cover the tile-major output exactly once
        assert red.grid[0] * red.block[0] * 8 >= d["TILES"] * x["BM"] * x["BN"] > (red.grid[0] - 1) * red.block[0] * 8


def test_new_renders_pass_the_device_only_policy():
    for x in (point(SPLIT_K=8), point(SCHED="streamk", BM=128, CONSUMERS=2, BN=112, CLUSTER=2)):
        src = FAM.render(x, Problem(333, 1000, 4096))
        assert policy.check(src) == [] and policy.check_device_only(src) == []


def test_comments_name_the_new_techniques():
    src = FAM.render(point(BN=64, SPLIT_K=4), THIN)
    for word in ("split-K with a deterministic separate reduction", "small tile", "wgmma's M is always 64",
                 "fixed order", "No atomics"):
        assert word in src, word
    src = FAM.render(point(SCHED="streamk"), THIN)
    assert "stream-K with a deterministic separate fix-up" in src


# ---- the workspace layout, checked on the render's own scheduler code -------------------------------
_HOST_MAIN = r"""
#include <cstdio>
#include <vector>
int main() {
    std::vector<int> cover(size_t(TILES) * KTILES, 0), writes(SLOTS, 0), slot_tile(SLOTS, -1), reads(SLOTS, 0);
    int bad = 0;
    for (int b = 0; b < NCLUSTERS; ++b)
        for (int rank = 0; rank < CLUSTER; ++rank) {
            const int first_item = b;
            constexpr int ITEM_STEP = NCLUSTERS;
            (void)ITEM_STEP;
%(SCHED)s
            for (int u = u_begin; u < u_end; u += U_STEP) {
                int im, tn, kt0, kt1;
                unit_of(%(UNIT_ARGS)s, im, tn, kt0, kt1);
                const int tm = im * CLUSTER + rank;
                if (kt1 <= kt0) ++bad;                            // an empty unit would release a stage it never used
                if (tm >= TILES_M) continue;                       // the padding tile of an odd TILES_M
                for (int kt = kt0; kt < kt1; ++kt) cover[size_t(tm * TILES_N + tn) * KTILES + kt]++;
                const long long slot = %(SLOT)s;
                if (slot < 0 || slot >= SLOTS) { ++bad; continue; }
                writes[slot]++;
                slot_tile[slot] = tm * TILES_N + tn;
            }
        }
    for (int tm = 0; tm < TILES_M; ++tm)
        for (int tn = 0; tn < TILES_N; ++tn) {
            const int tl = tm * TILES_N + tn;
            const int item = item_index(tm / CLUSTER, tn), rank = tm %% CLUSTER;
            (void)rank;
%(REDUCE)s
                if (slot < 0 || slot >= SLOTS || slot_tile[slot] != tl) { ++bad; continue; }
                reads[slot]++;
            }
        }
    for (size_t i = 0; i < cover.size(); ++i) bad += cover[i] != 1;
    for (int s = 0; s < SLOTS; ++s) bad += writes[s] > 1 || reads[s] != writes[s];
    bad += WS_BYTES != size_t(SLOTS) * SLOT_FLOATS * 4;
    std::printf("%%d\n", bad);
    return 0;
}
"""


def _host_check_source(src: str, x: dict) -> str:
    """The render's constants and scheduler functions, plus the kernel's and the reduction's own
    loop bounds and slot expressions, wrapped in a host program that counts violations."""
    consts = src[src.index("constexpr int kM"):src.index("// ---- registers")]
    funcs = re.findall(r"^__device__ __forceinline__ (?:void|int|long long) (?:item_of|item_index|unit_of|iter_begin|"
                       r"worker_of|segment_of)\(.*?^}\n|^__device__ __forceinline__ long long iter_begin.*?\n", src, re.S | re.M)
    sched = re.search(r"^    // (?:Split|Stream)-K: (?:this|worker).*?constexpr int U_STEP = [^;]*;\n", src, re.S | re.M)
    slot = re.search(r"float\* slot = P \+ size_t\((.*)\) \* SLOT_FLOATS;", src)
    body = src[src.index("sm90raw_reduce(const float"):]
    reduce = body[body.index("acc[i] = 0.0f;\n") + len("acc[i] = 0.0f;\n"):body.index("        const float* src")]
    assert consts and len(funcs) >= 3 and sched and slot and "const int slot" in reduce
    unit_args = "w, u" if x["SCHED"] == "streamk" else "u"
    return ("#include <cstddef>\n#define __device__\n#define __forceinline__ inline\nnamespace {\n" + consts
            + "".join(funcs) + "}\n" + _HOST_MAIN % {"SCHED": sched.group(0), "UNIT_ARGS": unit_args,
                                                     "SLOT": slot.group(1), "REDUCE": reduce})


LAYOUTS = [
    (THIN, point(SPLIT_K=8)),
    (THIN, point(BN=64, SPLIT_K=4, STAGES=8)),
    (EDGE, point(BN=80, SPLIT_K=3)),                                           # K tail: 65 k tiles / 3
    (Problem(333, 1000, 4096), point(BM=128, BN=112, CONSUMERS=2, SPLIT_K=2, CLUSTER=2, GROUP_M=4)),  # odd TILES_M
    (THIN, point(SCHED="streamk", BN=96)),
    (EDGE, point(SCHED="streamk", BN=64)),
    (Problem(333, 1000, 4096), point(BM=128, BN=112, CONSUMERS=2, SCHED="streamk", CLUSTER=2)),
    (Problem(2000, 3000, 1000), point(BM=128, BN=256, CONSUMERS=2, SCHED="streamk", MAX_CTAS=128)),  # several items per worker
]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
@pytest.mark.parametrize("p,x", LAYOUTS, ids=[f"{p}-{x['SCHED']}-s{x['SPLIT_K']}-c{x['CLUSTER']}" for p, x in LAYOUTS])
def test_reduction_reads_exactly_the_slots_the_kernel_writes_inside_the_workspace(p, x, tmp_path):
    assert FAM.invalid(x, p, LIM) is None
    src = FAM.render(x, p)
    (tmp_path / "check.cpp").write_text(_host_check_source(src, x))
    cc = subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(tmp_path / "check"), str(tmp_path / "check.cpp")],
                        capture_output=True, text=True, timeout=120)
    assert cc.returncode == 0, cc.stderr[-3000:]
    out = subprocess.run([str(tmp_path / "check")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "0", out.stdout + out.stderr
    assert launch.parse(src).workspace_bytes(p.M, p.N, p.K) == FAM.context(x, p)["WS_BYTES"]


# ---- builds ------------------------------------------------------------------------------------------
BUILDS = [
    (THIN, point(SPLIT_K=8)),                                                  # the small-tile split-K path
    (THIN, point(BN=64, SPLIT_K=4, STAGES=8)),
    (EDGE, point(BN=80, SPLIT_K=3)),                                           # tails, odd N: scalar C stores
    (Problem(512, 1024, 8192), point(BM=128, BN=128, CONSUMERS=2, SPLIT_K=2, CLUSTER=2)),
    (Problem(512, 1024, 8192), point(BM=256, BN=128, CONSUMERS=2, SPLIT_K=2, STAGES=3)),  # 2 x m64 per consumer
    (THIN, point(SCHED="streamk", BN=96)),
    (Problem(333, 1000, 4096), point(BM=128, BN=112, CONSUMERS=2, SCHED="streamk", CLUSTER=2)),
]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("p,x", BUILDS, ids=[f"{p}-{x['BM']}x{x['BN']}-{x['SCHED']}-s{x['SPLIT_K']}" for p, x in BUILDS])
def test_new_point_builds_both_kernels_without_spills(p, x, tmp_path):
    assert FAM.invalid(x, p, LIM) is None
    r = build(FAM.render(x, p), BuildConfig(cache_dir=str(tmp_path), archs=list(FAM.build_archs)))
    assert r.ok, r.reason
    names = sorted(e.split("@")[0] for e in r.resources)
    assert names == ["sm90raw_hgemm", "sm90raw_reduce"]
    for entry, res in r.resources.items():
        assert res["spill_stores"] == 0 and res["spill_loads"] == 0 and res["stack"] == 0, (entry, res)
