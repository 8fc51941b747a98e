"""sm90raw SCHED="hybrid" (issue 12): whole tiles for the full waves, one stream-K wave for the
rest, fixed up inside the kernel. The renders declare a workspace and two launches (sm90raw_clear
zeroes the flags, then sm90raw_hgemm); the render's own scheduler, compiled on the host with g++,
covers every (tile, k tile) once, gives every published partial exactly one reader (the tile's
owner) inside the workspace, and only ever makes a worker wait on a later worker's first stream-K
segment, and every worker publishes before it waits (so no worker waits on a chain of others).
The fix-up's partial slot (accumulator order) is written once per float4 and read back by the same
thread. Points build for sm_90a with no spills. Nothing here runs on a GPU (eval/sm90raw_check.py --hybrid does)."""

import re
import shutil
import subprocess

import pytest

from cudal2.config import BuildConfig
from cudal2.harness import launch, policy
from cudal2.harness.build import build
from cudal2.kernels.family import Limits
from cudal2.kernels.sm90raw import Sm90Raw, hybrid_sk_items
from cudal2.problem import Problem

FAM = Sm90Raw()
LIM = Limits()
BIG = Problem(8192, 8192, 8192)              # 1024 items of 2 x 128x256 over 66 clusters: 15.5 waves
EDGE = Problem(600, 1000, 4096)              # fewer items than workers: the whole problem is one stream-K wave


def point(**kw) -> dict:
    base = dict(BM=128, BN=256, CONSUMERS=2, STAGES=3, GROUP_M=8, EPI="tma", CLUSTER=1, MAX_CTAS=132,
                SPLIT_K=1, SCHED="hybrid")
    assert set(kw) <= set(base)
    return {**base, **kw}


# ---- the split between whole tiles and the stream-K wave ----------------------------------------
def test_the_stream_k_wave_is_the_last_partial_wave_when_it_is_at_least_half_full():
    assert hybrid_sk_items(512, 132) == 116                 # 3 full waves + 116
    assert hybrid_sk_items(140, 132) == 140                 # 8 left: 8 + a full wave, not 8 alone
    assert hybrid_sk_items(27, 132) == 27                   # less than a wave: all of it


def test_data_parallel_items_fill_whole_waves():
    for p, x in [(BIG, point(CLUSTER=2)), (Problem(4096, 4096, 4096), point()), (EDGE, point(BN=112, EPI="direct"))]:
        d = FAM.context(x, p)
        assert d["DP_ITEMS"] % d["WORKERS"] == 0 and d["DP_ITEMS"] + d["SK_ITEMS"] == d["ITEMS"]


# ---- invalid: each rule with its reason --------------------------------------------------------
def test_invalid_rejects_hybrid_where_items_divide_evenly():
    reason = FAM.invalid(point(BN=128), Problem(512, 4224, 4096), LIM)          # 4 x 33 = 132 items
    assert reason and "evenly" in reason


def test_invalid_rejects_hybrid_with_split_k():
    reason = FAM.invalid(point(SPLIT_K=2, EPI="direct"), BIG, LIM)
    assert reason and "SPLIT_K must be 1" in reason


def test_invalid_rejects_tiles_cut_into_too_many_segments():
    reason = FAM.invalid(point(BN=128), Problem(128, 1024, 16384), LIM)         # 8 tiles over 132 workers
    assert reason and "segments" in reason and "SPLIT_K" in reason


def test_invalid_rejects_a_stream_k_wave_too_short_to_fill_the_pipeline():
    reason = FAM.invalid(point(BM=64, BN=64, CONSUMERS=1, EPI="direct"), Problem(64, 640, 128), LIM)
    assert reason and "never fills" in reason


def test_hybrid_allows_the_tma_epilogue():
    assert FAM.invalid(point(), Problem(4096, 4096, 4096), LIM) is None


# ---- the prior ------------------------------------------------------------------------------------
def test_prior_prefers_hybrid_where_a_wave_is_long():
    x = point(CLUSTER=2)
    assert FAM.prior(x, BIG, LIM) > FAM.prior({**x, "SCHED": "tiles"}, BIG, LIM)


def test_prior_prefers_whole_tiles_where_the_fix_up_costs_more_than_the_partial_wave():
    p = Problem(4096, 4096, 4096)                          # 3.9 waves of 45 us: ~5 us to gain, ~9 to pay
    assert FAM.prior(point(), p, LIM) < FAM.prior(point(SCHED="tiles"), p, LIM)


# ---- renders and launch specs ----------------------------------------------------------------------
CASES = [
    (BIG, point(CLUSTER=2)),
    (Problem(4096, 4096, 4096), point()),
    (EDGE, point(BN=112, EPI="direct")),
    (EDGE, point(BN=112, EPI="direct", CLUSTER=2, GROUP_M=4)),                  # odd TILES_M: padding tiles
    (Problem(2000, 3000, 1000), point(BN=256, EPI="direct", MAX_CTAS=128)),     # K tail, M and N tails
    (Problem(1025, 1001, 4104), point(BM=64, BN=64, CONSUMERS=1, EPI="direct", STAGES=4)),  # odd N, wave + 8
    (Problem(4096, 4480, 2048), point(BN=128)),      # 32 x 35 = 1120 items: 8 left, so 140 in the stream-K wave
]
IDS = [f"{p}-{x['BM']}x{x['BN']}-c{x['CLUSTER']}-{x['EPI']}" for p, x in CASES]


@pytest.mark.parametrize("p,x", CASES, ids=IDS)
def test_render_launches_the_clear_then_the_kernel_with_the_workspace(p, x):
    assert FAM.invalid(x, p, LIM) is None
    d = FAM.context(x, p)
    src = FAM.render(x, p)
    assert policy.check(src) == [] and policy.check_device_only(src) == []
    spec = launch.parse(src)
    assert spec.workspace_bytes(p.M, p.N, p.K) == d["WS_BYTES"] >= d["FLAG_OFFSET"] + 4 * d["FLAGS"]
    clear, main = spec.resolve(p.M, p.N, p.K)
    assert clear.name == "sm90raw_clear" and clear.args == [("ws", d["FLAG_OFFSET"])]
    assert clear.grid[0] * clear.block[0] >= d["FLAGS"]
    assert main.name == "sm90raw_hgemm" and main.grid == (d["GRID"], 1, 1) and main.args[2] == ("ws", 0)
    assert main.args[3][0] == ("tmap" if x["EPI"] == "tma" else "C")


def test_comments_name_the_technique():
    src = FAM.render(point(), Problem(4096, 4096, 4096))
    for word in ("stream-K hybrid", "red.release.gpu", "ld.acquire.gpu", "No deadlock", "worker order",
                 "sm90raw_clear", "k-synchronous"):
        assert word in src, word


# ---- the fix-up's layout, checked on the render's own scheduler code -------------------------------
_HOST_MAIN = r"""
#include <cstdio>
#include <vector>
int main() {
    std::vector<int> cover(size_t(TILES) * KTILES, 0), writes(SLOTS, 0), slot_tile(SLOTS, -1), reads(SLOTS, 0);
    std::vector<std::pair<int, int>> wanted;              // (slot, tile) each owner reads
    int bad = 0;
    for (int w = 0; w < WORKERS; ++w)
        for (int rank = 0; rank < CLUSTER; ++rank) {
            const int n = units_of(w);
            bool waited = false;
            for (int u = 0; u < n; ++u) {
                int im, tn, kt0, kt1, sk;
                unit_of(w, u, im, tn, kt0, kt1, sk);
                if (kt1 <= kt0) ++bad;                    // an empty unit would release a stage it never used
                const int tm = im * CLUSTER + rank;
                if (tm >= TILES_M) continue;               // the padding tile of an odd TILES_M: skipped by all
                const int tile = tm * TILES_N + tn;
                for (int kt = kt0; kt < kt1; ++kt) cover[size_t(tile) * KTILES + kt]++;
                if (sk < 0) { bad += kt0 != 0 || kt1 != KTILES || u >= DP_PER_WORKER; continue; }
                if (kt0 > 0) {                             // publishes a partial
                    const int slot = slot_of(w, sk, rank);
                    if (slot < 0 || slot >= SLOTS) { ++bad; continue; }
                    writes[slot]++;
                    slot_tile[slot] = tile;
                    bad += waited;                         // publishes before it waits
                } else if (kt1 < KTILES) {                 // the owner: waits for later workers
                    if (last_worker(sk) <= w) ++bad;
                    waited = true;
                    for (int v = w + 1; v <= last_worker(sk); ++v) wanted.push_back({slot_of(v, sk, rank), tile});
                }
            }
        }
    for (size_t i = 0; i < cover.size(); ++i) bad += cover[i] != 1;
    for (auto& r : wanted) {
        if (r.first < 0 || r.first >= SLOTS) { ++bad; continue; }
        reads[r.first]++;
        bad += slot_tile[r.first] != r.second;
    }
    for (int s = 0; s < SLOTS; ++s) bad += writes[s] > 1 || reads[s] != writes[s];
    bad += FLAG_OFFSET < size_t(SLOTS) * SLOT_FLOATS * 4 || WS_BYTES < FLAG_OFFSET + size_t(FLAGS) * 4;
    bad += FLAGS != SLOTS * CONSUMERS;
    std::printf("%d\n", bad);
    return 0;
}
"""

_FUNCS = ("item_of", "iter_begin", "worker_of", "sk_first", "sk_count", "segment_of", "units_of", "sk_item", "unit_of", "slot_of",
          "last_worker")


def _function(src: str, name: str) -> str:
    """The render's definition of `name`, up to its closing brace."""
    m = re.search(rf"^__device__ __forceinline__ [\w ]+ {name}\(", src, re.M)
    assert m, name
    i, depth = src.index("{", m.end()), 0
    for j in range(i, len(src)):
        depth += {"{": 1, "}": -1}.get(src[j], 0)
        if depth == 0:
            return src[m.start():j + 1] + "\n"
    raise AssertionError(name)


def run_on_host(src: str, funcs, main: str, tmp_path) -> str:
    """The render's constants and device functions `funcs`, compiled with g++ beside `main` and run on
    the host; asserts that it builds and exits 0, and returns what it printed."""
    consts = src[src.index("constexpr int kM"):src.index("// ---- registers")]
    prog = ("#include <cstddef>\n#include <cstdint>\n#include <utility>\n#define __device__\n"
            "#define __forceinline__ inline\nnamespace {\n" + consts + "".join(_function(src, f) for f in funcs)
            + "}\n" + main)
    (tmp_path / "host.cpp").write_text(prog)
    cc = subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(tmp_path / "host"), str(tmp_path / "host.cpp")],
                        capture_output=True, text=True, timeout=120)
    assert cc.returncode == 0, cc.stderr[-3000:]
    out = subprocess.run([str(tmp_path / "host")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
@pytest.mark.parametrize("p,x", CASES, ids=IDS)
def test_every_partial_has_one_writer_and_one_reader_and_waits_only_go_forward(p, x, tmp_path):
    assert run_on_host(FAM.render(x, p), _FUNCS, _HOST_MAIN, tmp_path).strip() == "0"


# The partial slot in accumulator order: the render's publish_partial and add_partial, with the CUDA
# vector type and cache-hinted accesses stubbed on the host, run for every consumer and thread.
_SLOT_MAIN = r"""
#include <cstdio>
#include <vector>
int main() {
    std::vector<float> slot(SLOT_FLOATS, 0.0f);
    std::vector<int> hits(SLOT_FLOATS / 4, 0);
    int bad = 0;
    for (int c = 0; c < CONSUMERS; ++c)
        for (int tid = 0; tid < 128; ++tid) {
            float d[M_SUB][BN / 2];
            for (int s = 0; s < M_SUB; ++s)
                for (int i = 0; i < BN / 2; ++i) d[s][i] = float(((c * 128 + tid) * M_SUB + s) * (BN / 2) + i + 1);
            g_hits = &hits;
            g_base = reinterpret_cast<float4*>(slot.data());
            publish_partial(slot.data(), d, c, tid);
        }
    for (int h : hits) bad += h != 1;                     // every float4 of the slot written exactly once
    for (int c = 0; c < CONSUMERS; ++c)
        for (int tid = 0; tid < 128; ++tid) {
            float d[M_SUB][BN / 2] = {};
            add_partial(slot.data(), d, c, tid);
            for (int s = 0; s < M_SUB; ++s)               // each thread reads back its own values
                for (int i = 0; i < BN / 2; ++i) bad += d[s][i] != float(((c * 128 + tid) * M_SUB + s) * (BN / 2) + i + 1);
        }
    std::printf("%d\n", bad);
    return 0;
}
"""
_SLOT_STUBS = """
struct float4 { float x, y, z, w; };
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static std::vector<int>* g_hits;
static float4* g_base;
inline void __stcg(float4* p, float4 v) { (*g_hits)[p - g_base]++; *p = v; }
inline float4 __ldcg(const float4* p) { return *p; }
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
@pytest.mark.parametrize("p,x", [CASES[1], CASES[5], (Problem(4096, 4096, 4096), point(BM=256, BN=144))],
                         ids=["128x256-c2", "64x64-c1", "256x144-m_sub2"])
def test_partial_slot_is_tiled_once_and_read_back_by_the_same_thread(p, x, tmp_path):
    src = FAM.render(x, p)
    at = src.index("// ---- registers")
    src = src[:at] + "}\n#include <vector>\nnamespace {\n" + _SLOT_STUBS + src[at:]
    assert run_on_host(src, ("partial_base", "publish_partial", "add_partial"), _SLOT_MAIN, tmp_path).strip() == "0"

# ---- builds ------------------------------------------------------------------------------------------
BUILDS = [CASES[0], CASES[2], CASES[5]]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("p,x", BUILDS, ids=[IDS[CASES.index(c)] for c in BUILDS])
def test_hybrid_point_builds_both_kernels_without_spills(p, x, tmp_path):
    r = build(FAM.render(x, p), BuildConfig(cache_dir=str(tmp_path), archs=list(FAM.build_archs)))
    assert r.ok, r.reason
    assert sorted(e.split("@")[0] for e in r.resources) == ["sm90raw_clear", "sm90raw_hgemm"]
    for entry, res in r.resources.items():
        assert res["spill_stores"] == 0 and res["spill_loads"] == 0 and res["stack"] == 0, (entry, res)
