"""The sm90 family: Hopper-native HGEMM from CUTLASS 3.x / CuTe collective builders.

One point is one CUTLASS `GemmUniversal` kernel: wgmma fed by TMA into 128B-swizzled shared
memory, an mbarrier pipeline of STAGES stages, warp-specialized producer/consumer warpgroups
with setmaxnreg (cooperative or ping-pong), a persistent grid over a static tile scheduler
(grouped raster), or a deterministic stream-K scheduler (CUTLASS's heuristic stream-K, or plain
split-K over SPLIT_K slices of K), optional 2-CTA clusters with TMA
multicast, and a TMA-store epilogue with no source operand (beta = 0).

Guarantees: `invalid` rejects, with a reason, every point that would fail a CUTLASS static
assertion or can_implement check (schedule/tile rules, shared-memory budget, 16-byte TMA
strides), plus points that are wasteful or duplicate another point's kernel for the problem at
hand (tiles far larger than the problem, clusters with idle CTAs, swizzle or raster settings
that CUTLASS would clip to a smaller point, stream-K where its heuristic falls back to the
data-parallel schedule); `prior` ranks by a coarse throughput model (tile intensity, padding
waste, wave quantization on `Limits.sm_count` SMs, cluster and schedule preferences).

Does not: compile or time anything. The shared-memory model mirrors CUTLASS 4.2's
StageCountAutoCarveout and epilogue-tile rules; the template's `static_assert` on the kernel's
SharedStorageSize backs it up at compile time.
"""

from __future__ import annotations

import math
from typing import Any

from cudal2.kernels.family import Family, Limits, Params, cdiv, register
from cudal2.problem import Problem

# CUTLASS's sm90 shared-memory capacity (227 KB), used by StageCountAutoCarveout whatever the device.
CUTLASS_SM90_SMEM = 232448
ALIGN = 128                      # CUTLASS rounds stage bytes and the carve-out to 128 bytes
STAGE_BARRIER_BYTES = 16         # full + empty mbarrier per stage (PipelineTmaAsync)
KERNEL_OVERHEAD = 128            # pipelines and barriers outside the tensor storage (margin)
MAX_ACC_PER_THREAD = 128         # fp32 accumulators per consumer thread before spills start
MIN_STAGES = 3
MIN_ITERS_PER_SK_UNIT = 8        # CUTLASS stream-K: fewer k-tiles per output tile -> data-parallel


def _round_up(a: int, b: int) -> int:
    return cdiv(a, b) * b


class Sm90(Family):
    name = "sm90"
    template = "sm90_cutlass.cu.j2"
    build_archs = ("sm_90a",)
    shape_specific = False   # CUTLASS takes the problem shape at run time
    space = {
        "TILE_M": (64, 128, 256),
        "TILE_N": (64, 128, 192, 256),
        "TILE_K": (64, 128),
        "CLUSTER_M": (1, 2),
        "CLUSTER_N": (1, 2),
        "SCHEDULE": ("cooperative", "pingpong"),
        "STAGES": (0, 3, 4, 5),             # 0: as many as fit after the epilogue (StageCountAutoCarveout)
        "RASTER": ("M", "N"),               # CUTLASS's "Heuristic" always equals one of these two
        "SWIZZLE": (1, 2, 4, 8),
        "SCHEDULER": ("persistent", "streamk"),
        # > 1: the stream-K scheduler's split-K decomposition (every output tile's K range cut into
        # SPLIT_K slices, run by different CTAs and reduced in a fixed order through the workspace).
        "SPLIT_K": (1, 2, 4, 8, 16),
    }

    # ---- derived quantities (shared by invalid, prior and context) ----

    @staticmethod
    def stage_bytes(x: Params) -> int:
        return _round_up((x["TILE_M"] + x["TILE_N"]) * x["TILE_K"] * 2, ALIGN) + STAGE_BARRIER_BYTES

    @staticmethod
    def epilogue_tile(x: Params) -> tuple[int, int]:
        """CUTLASS's EpilogueTileAuto for fp16 D: 128 x 32 (cooperative) or 64 x 32 (ping-pong)."""
        tm, tn = x["TILE_M"], x["TILE_N"]
        cap_m = 128 if x["SCHEDULE"] == "cooperative" else 64
        return min(cap_m, tm), math.gcd(min(32, tn), tn)

    @classmethod
    def epilogue_smem(cls, x: Params) -> int:
        """D staging buffers of the TMA-store epilogue (no C buffers: ElementC is void)."""
        em, en = cls.epilogue_tile(x)
        sub_tiles = (x["TILE_M"] // em) * (x["TILE_N"] // en)
        stages_d = min(sub_tiles, 2)
        return stages_d * em * en * 2 + 1024   # + 1 KB alignment padding (measured: 17408 / 9216 bytes)

    @classmethod
    def auto_stages(cls, x: Params) -> int:
        carve = _round_up(cls.epilogue_smem(x), ALIGN)
        return (CUTLASS_SM90_SMEM // ALIGN * ALIGN - carve) // cls.stage_bytes(x)

    @classmethod
    def stages(cls, x: Params) -> int:
        return x["STAGES"] or cls.auto_stages(x)

    @classmethod
    def smem_bytes(cls, x: Params) -> int:
        return cls.stages(x) * cls.stage_bytes(x) + _round_up(cls.epilogue_smem(x), ALIGN) + KERNEL_OVERHEAD

    @staticmethod
    def acc_per_thread(x: Params) -> int:
        threads = 256 if x["SCHEDULE"] == "cooperative" else 128
        return x["TILE_M"] * x["TILE_N"] // threads

    @staticmethod
    def blocks(x: Params, p: Problem) -> tuple[int, int]:
        """CTA tiles along M and N, rounded up to whole clusters (as CUTLASS launches them)."""
        return (_round_up(cdiv(p.M, x["TILE_M"]), x["CLUSTER_M"]),
                _round_up(cdiv(p.N, x["TILE_N"]), x["CLUSTER_N"]))

    @staticmethod
    def log_swizzle(bm: int, bn: int, swizzle: int) -> int:
        """CUTLASS's get_log_swizzle_size: the swizzle actually used for a bm x bn tile grid."""
        lo = min(bm, bn)
        if swizzle >= 8 and lo >= 6:
            return 3
        if swizzle >= 4 and lo >= 3:
            return 2
        if swizzle >= 2 and lo >= 2:
            return 1
        return 0

    @staticmethod
    def ctas_per_wave(x: Params, lim: Limits) -> int:
        """Persistent grid size: sm_count, less the SMs a cluster cannot fill in each 18-SM GPC
        (CUTLASS's get_max_cta_occupancy), before any truncation to the tile count."""
        cs = x["CLUSTER_M"] * x["CLUSTER_N"]
        if cs == 1:
            ctas = lim.sm_count
        else:
            gpcs = 1 if lim.sm_count < 18 else lim.sm_count // 18
            rest = 0 if lim.sm_count < 18 else lim.sm_count % 18
            ctas = min(lim.sm_count, gpcs * (18 - 18 % cs) + rest - rest % cs)
        return ctas

    @classmethod
    def streamk_tiles(cls, x: Params, p: Problem, lim: Limits) -> int:
        """Output tiles CUTLASS's Heuristic stream-K decomposition hands to stream-K units
        (get_num_sk_tiles / get_num_sk_units); 0 means it falls back to data-parallel."""
        bm, bn = cls.blocks(x, p)
        s = 1 << cls.log_swizzle(bm, bn, x["SWIZZLE"])
        tiles = _round_up(bm, s * x["CLUSTER_M"]) * _round_up(bn, s * x["CLUSTER_N"])
        wave = cls.ctas_per_wave(x, lim)
        k_tiles = cdiv(p.K, x["TILE_K"])
        full, total = tiles // wave, cdiv(tiles, wave)
        if full == total or k_tiles <= MIN_ITERS_PER_SK_UNIT:
            return 0
        if 2 * (tiles - full * wave) >= wave:
            return 0
        dp = (full - 1) * wave if full > 1 else 0
        cs = x["CLUSTER_M"] * x["CLUSTER_N"]
        sk = (tiles - dp) // cs * cs
        units = min(wave // cs * cs, (k_tiles * sk // MIN_ITERS_PER_SK_UNIT) // cs * cs)
        return sk if units else 0

    # ---- the Family interface ----

    def invalid(self, x: Params, p: Problem, lim: Limits) -> str | None:
        tm, tn, tk = x["TILE_M"], x["TILE_N"], x["TILE_K"]
        cm, cn = x["CLUSTER_M"], x["CLUSTER_N"]
        coop = x["SCHEDULE"] == "cooperative"
        if lim.cc < (9, 0):
            return f"needs sm_90a (wgmma, TMA), device is sm_{lim.cc[0]}{lim.cc[1]}"
        if p.N % 8:
            return f"N={p.N} is not a multiple of 8: TMA needs the C/D row stride (N*2 bytes) to be a multiple of 16"
        if p.K % 8:
            return f"K={p.K} is not a multiple of 8: TMA needs 16-byte A/B row strides"
        if cm * cn > 2:
            return f"cluster {cm}x{cn} has {cm * cn} CTAs; this family allows at most 2"
        if coop and tm < 128:
            return "cooperative splits the tile's rows over 2 consumer warpgroups of >= 64 rows: needs TILE_M >= 128"
        if not coop and x["SCHEDULER"] == "streamk":
            return "CUTLASS's ping-pong kernel does not support the stream-K scheduler"
        acc = self.acc_per_thread(x)
        if acc > MAX_ACC_PER_THREAD:
            who = "2 consumer warpgroups" if coop else "one consumer warpgroup (ping-pong)"
            return (f"{tm}x{tn} tile on {who} needs {acc} fp32 accumulators per thread "
                    f"(> {MAX_ACC_PER_THREAD}: register spills)")
        auto = self.auto_stages(x)
        if x["STAGES"] and x["STAGES"] == auto:
            return f"STAGES={x['STAGES']} is what STAGES=0 (auto carve-out) picks for this tile: duplicate"
        st = self.stages(x)
        if st < MIN_STAGES:
            return (f"only {st} pipeline stages of {self.stage_bytes(x)} bytes fit in shared memory "
                    f"(need >= {MIN_STAGES})")
        smem = self.smem_bytes(x)
        cap = min(lim.smem_per_block, CUTLASS_SM90_SMEM)
        if smem > cap:
            return f"shared memory {smem} bytes ({st} stages x {self.stage_bytes(x)} + epilogue) > {cap}"
        # Split-K (cooperative, so TILE_M >= 128) is how a memory-bound thin-M problem fills the SMs:
        # half a tile of padding rows costs it little, so it is spared the rule up to that much.
        if tm > 64 and tm >= (4 if x["SPLIT_K"] > 1 else 2) * p.M:
            return f"TILE_M={tm} is far larger than M={p.M} (at least half the tile is padding)"
        if tn > 64 and tn >= 2 * p.N:
            return f"TILE_N={tn} is far larger than N={p.N} (at least half the tile is padding)"
        if tk > 64 and p.K <= 64:
            return f"TILE_K={tk} with K={p.K}: half of every k-tile is padding"
        if cm > 1 and cdiv(p.M, tm) < cm:
            return f"cluster of {cm} along M but only {cdiv(p.M, tm)} tile(s) along M: an idle CTA per cluster"
        if cn > 1 and cdiv(p.N, tn) < cn:
            return f"cluster of {cn} along N but only {cdiv(p.N, tn)} tile(s) along N: an idle CTA per cluster"
        bm, bn = self.blocks(x, p)
        used = self.log_swizzle(bm, bn, x["SWIZZLE"])
        if (1 << used) != x["SWIZZLE"]:
            return (f"SWIZZLE={x['SWIZZLE']} acts as {1 << used} on a {bm}x{bn} tile grid "
                    f"(CUTLASS clips it): duplicate")
        if x["RASTER"] == "N" and min(bm // cm, bn // cn) == 1:
            return "a single row or column of clusters: raster order N visits tiles as M does (duplicate)"
        split = x["SPLIT_K"]
        if split > 1 and x["SCHEDULER"] != "streamk":
            return "split-K runs on CUTLASS's stream-K scheduler: needs SCHEDULER=streamk"
        if split > 1 and cdiv(p.K, tk) // split < 2:
            return (f"SPLIT_K={split} leaves fewer than 2 k-tiles of {tk} per slice of K={p.K} "
                    "(CUTLASS lowers the split count: duplicate)")
        if x["SCHEDULER"] == "streamk" and split == 1 and self.streamk_tiles(x, p, lim) == 0:
            return ("stream-K's heuristic picks the data-parallel schedule here (no wave tail to split): "
                    "duplicate of persistent")
        return None

    def prior(self, x: Params, p: Problem, lim: Limits) -> float:
        """log of a relative throughput estimate; only the ordering means anything. Calibrated by
        hand on two H100 runs of eval/check_family_sm90.py (26 points, 5 shapes; results in
        eval/results/sm90_family_h100.json): Spearman 0.6-0.9 per shape, in sample."""
        tm, tn, tk = x["TILE_M"], x["TILE_N"], x["TILE_K"]
        cs = x["CLUSTER_M"] * x["CLUSTER_N"]
        coop = x["SCHEDULE"] == "cooperative"
        tiles_m, tiles_n = cdiv(p.M, tm), cdiv(p.N, tn)
        tiles = tiles_m * tiles_n
        # Useful fraction of the computed tiles (edge padding).
        pad = (p.M * p.N) / (tiles_m * tm * tiles_n * tn)
        # Operand reuse, twice: per CTA tile (global/L2 -> smem bytes per MAC) and per wgmma
        # instruction (m64 x n=TILE_N x k16: smem -> tensor-core bytes per MAC, B re-read for every
        # 64-row atom); both saturate. 64x64 tiles run at about a third of 128x256's rate on big
        # problems.
        cta, wg = tm * tn / (tm + tn), 64 * tn / (64 + tn)
        tile_eff = (cta / (cta + 40.0)) * (wg / (wg + 40.0))
        # Wave quantization over the persistent grid (split-K multiplies the work units); softened
        # (square root) because a part-empty wave still draws the whole memory bandwidth on short or
        # memory-bound problems.
        split = x["SPLIT_K"]
        units = tiles * split
        wave = max(1, self.ctas_per_wave(x, lim))
        waves = units / wave
        wave_eff = math.sqrt(waves / math.ceil(waves))
        if split > 1:
            # Split-K pays a serial chain: the deterministic turnstile makes each slice wait for the
            # one before it to fold its fp32 partial tile in (about SPLIT_K x 8 bytes x TILE_M x TILE_N
            # through one SM at ~100 GB/s), plus the workspace-flag memset launch, against an ideal
            # time for the whole problem. Calibrated on one H100 run: 128x64 tiles, split 8 at
            # 128x1024x2048 took 19 us where cuBLAS took 6 us.
            ideal = max(p.flops / 700e12, p.min_bytes / 2.5e12)
            chain = split * tm * tn * 8 / 100e9 + 2e-6
            sk = ideal / (ideal + chain)
        else:
            # Stream-K (deterministic turnstile fix-up) measured slower than data-parallel at every
            # shape tried, even with one lone partial wave: a mild penalty keeps it explorable.
            sk = 0.9 if x["SCHEDULER"] == "streamk" else 1.0
        # Pipeline depth: fewer stages than fit leaves TMA latency exposed (ping-pong 128x128 with 4
        # stages instead of 6 lost 10-20%); TILE_K=128 leaves only 3.
        st, auto = self.stages(x), self.auto_stages(x)
        k_tiles = cdiv(p.K, tk) // split
        pipe = {2: 0.9, 3: 0.95}.get(min(st, k_tiles), 1.0) * (0.95 ** max(0, min(auto, 6) - st))
        k_wide = 1.0 if tk == 64 else 0.9
        # Ping-pong with 128-row tiles overlaps one warpgroup's epilogue with the other's mainloop:
        # measured the fastest point at 4096^3 and 8192^3 (with a 1x2 cluster and raster along M;
        # a 2x1 cluster or raster along N cost it 5-30%).
        sched = 1.0
        if not coop:
            sched = (1.04 if tm >= 128 else 1.0) * (0.92 if x["RASTER"] == "N" else 1.0)
        # Clusters: TMA multicast of the larger operand tile pays (a 2x1 cluster multicasts B's
        # TILE_N rows, a 1x2 cluster A's TILE_M rows; square tiles measured best with 1x2), and much
        # more on memory-bound shapes when it multicasts the operand with the most bytes (128x4096x4096:
        # 64x64 ping-pong went from 0.75x to 0.96x of cuBLAS with a 2x1 cluster).
        clus = 1.0
        if cs == 2:
            along_m = x["CLUSTER_M"] == 2
            larger = (tn > tm) if along_m else (tm >= tn)
            clus = 1.02 * (1.03 if larger else 0.95)
            flops_per_byte = p.flops / p.min_bytes
            if flops_per_byte < 300 and (p.N > p.M) == along_m:
                clus *= 1.15
        big = tiles >= 2 * lim.sm_count
        # Grouped raster helps L2 reuse on big grids; huge swizzles only help huge grids.
        swz = {1: 0.99, 2: 1.0, 4: 1.0, 8: 0.995}[x["SWIZZLE"]] if big else 1.0
        ras = 1.0 if (x["RASTER"] == "M") == (tiles_n >= tiles_m) else 0.995
        return math.log(pad * tile_eff * wave_eff * sk * pipe * k_wide * sched * clus * swz * ras)

    def context(self, x: Params, p: Problem) -> dict[str, Any]:
        coop = x["SCHEDULE"] == "cooperative"
        cm, cn = x["CLUSTER_M"], x["CLUSTER_N"]
        tm, tn = x["TILE_M"], x["TILE_N"]
        mc = []
        if cm > 1:
            mc.append(f"each B tile is multicast to the {cm} CTAs of a cluster column (same N, different M)")
        if cn > 1:
            mc.append(f"each A tile is multicast to the {cn} CTAs of a cluster row (same M, different N)")
        em, en = self.epilogue_tile(x)
        if x["SPLIT_K"] > 1:
            sched = (f"a split-K decomposition on the stream-K scheduler: every output tile's K range is\n"
                     f"//    cut into {x['SPLIT_K']} slices run by different CTAs; the partial fp32 tiles are reduced through\n"
                     "//    the workspace in a fixed turnstile order (ReductionMode::Deterministic), so the output is\n"
                     "//    bitwise reproducible")
        elif x["SCHEDULER"] == "streamk":
            sched = ("a stream-K tile scheduler (Heuristic decomposition:\n"
                     "//    data-parallel waves, the wave tail split along K over all SMs; partial tiles are reduced\n"
                     "//    through the workspace in a fixed turnstile order, ReductionMode::Deterministic, so the\n"
                     "//    output is bitwise reproducible)")
        else:
            sched = "a static persistent tile\n//    scheduler (each CTA strides through the tile list)"
        return {
            "mainloop_schedule": "cutlass::gemm::KernelTmaWarpSpecialized" + ("Cooperative" if coop else "Pingpong"),
            "epilogue_schedule": "cutlass::epilogue::TmaWarpSpecialized" + ("Cooperative" if coop else ""),
            "scheduler_tag": "cutlass::gemm::" + ("StreamKScheduler" if x["SCHEDULER"] == "streamk"
                                                  else "PersistentScheduler"),
            "raster_enum": {"M": "AlongM", "N": "AlongN"}[x["RASTER"]],
            "raster_text": {"M": "along M (consecutive CTAs walk down a column of tiles)",
                            "N": "along N (consecutive CTAs walk along a row of tiles)"}[x["RASTER"]],
            "stages_text": (f"{x['STAGES']}-stage mbarrier ring (fixed)" if x["STAGES"] else
                            f"{self.auto_stages(x)}-stage mbarrier ring "
                            "(StageCountAutoCarveout: all that fit beside the epilogue)"),
            "acc_regs": self.acc_per_thread(x),
            "multicast_text": ("; TMA multicast: " + "; ".join(mc)) if mc else " (no multicast)",
            "mma_text": (f"the two consumer warpgroups split the {tm}-row tile ({tm // 2}x{tn} each)" if coop else
                         f"each consumer warpgroup computes a whole {tm}x{tn} tile"),
            "consumer_regs": 232 if coop else 240,
            "schedule_text": ("Cooperative schedule: both consumers work on the same output tile and share its "
                              "epilogue."
                              if coop else
                              "Ping-pong schedule: the consumers work on different output tiles and take turns, so\n"
                              "//    one warpgroup's epilogue overlaps the other's mainloop (ordered by named "
                              "barriers)."),
            "scheduler_text": sched,
            "epilogue_text": (f"{'TmaWarpSpecializedCooperative' if coop else 'TmaWarpSpecialized'} "
                              f"({em}x{en} subtiles, no source C)"),
            "smem_limit": CUTLASS_SM90_SMEM,
        }


register(Sm90())
