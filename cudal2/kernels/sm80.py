"""The sm80 family: an Ampere-style tensor-core HGEMM (mma.sync m16n8k16 + ldmatrix + cp.async
multistage pipeline, XOR-swizzled smem, grouped raster, optional deterministic split-K). It
uses no Hopper features, so it runs on sm_80 and later; it is built for sm_90a here.

The family renders contract v2 (docs/kernel-contract.md): a device-only file, one shape per
render, whose `/* cudal2-launch */` block (built from `context`, as literals) has the harness launch
`extern "C" __global__ sm80_hgemm(A, B, C)`, or with SPLIT_K > 1 `sm80_hgemm(A, B, workspace)` then
`splitk_reduce(workspace, C)` over a workspace of SPLIT_K x M x N fp32 partials. No host code.

Guarantees: `invalid` rejects, with a reason, every point the template cannot build or run
correctly for the shape (shared memory, warp-tile granularity, thread and register budgets,
split-K divisibility), plus points that are pure waste (a tile far larger than the problem,
pipeline stages that can never fill); `prior` is a cheap time model (estimated TFLOP/s, higher is
better) that rewards full waves, enough CTAs, high per-CTA and per-warp arithmetic intensity,
BK=64 over BK=32, and charges split-K for its partials traffic and second launch; `context` gives
the template the derived constants, so the header comment, the launch block and the template's
static_asserts carry the same numbers as here (a mismatch fails the build, not the run).

Does not: measure anything (the harness does). The register estimate is a rule of thumb (it
matched ptxas within 16 registers on ~60 points, no spills at the 255 edge); the prior's
constants were fitted to 98 H100 measurements of this template (eval/check_family.py) and rank
about 85% of same-shape pairs correctly on that data, which is in-sample.
"""

from __future__ import annotations

from typing import Any

from cudal2.kernels.family import MAX_REGS, Family, Limits, Params, cdiv, ctas_per_sm, register
from cudal2.problem import Problem

REG_OVERHEAD = 40            # addresses, loop counters, predicates beyond accumulators and fragments
MAX_LOADS_PER_THREAD = 16    # cp.async chunks per thread per stage (A + B)
MAX_WORKSPACE = 1 << 30      # split-K partials larger than this are never worth it


class Sm80(Family):
    name = "sm80"
    template = "sm80_mma.cu.j2"
    build_archs = ("sm_90a",)
    walk_params = ("GROUP_M",)
    space = {
        "BM": (32, 64, 128, 256),
        "BN": (32, 64, 128, 256),
        "BK": (32, 64),
        "WARPS_M": (1, 2, 4),
        "WARPS_N": (1, 2, 4),
        "STAGES": (2, 3, 4, 5, 6),
        "GROUP_M": (1, 4, 8, 16),
        "SPLIT_K": (1, 2, 4, 8, 16),
    }

    # ---- derived constants (the template recomputes them as constexpr and asserts the ones it uses
    #      in the launch block: SMEM_BYTES, THREADS, TILES_M * TILES_N, WORKSPACE_BYTES, RED_BLOCKS) ----
    def context(self, params: Params, p: Problem) -> dict[str, Any]:
        BM, BN, BK = params["BM"], params["BN"], params["BK"]
        WARPS_M, WARPS_N, STAGES, SPLIT_K = params["WARPS_M"], params["WARPS_N"], params["STAGES"], params["SPLIT_K"]
        threads = 32 * WARPS_M * WARPS_N
        WM, WN = BM // WARPS_M, BN // WARPS_N
        MI, NI = WM // 16, WN // 8
        pipe = STAGES * (BM + BN) * BK * 2
        epi = BM * (BN + 8) * 2 if SPLIT_K == 1 else 0
        tiles_m, tiles_n, ktiles = cdiv(p.M, BM), cdiv(p.N, BN), cdiv(p.K, BK)
        regs = WM * WN // 32 + 2 * (MI * 4 + NI * 2) + REG_OVERHEAD
        return {
            "THREADS": threads, "WM": WM, "WN": WN, "MI": MI, "NI": NI,
            "PIPE_BYTES": pipe, "EPI_BYTES": epi, "SMEM_BYTES": max(pipe, epi),
            "TILES_M": tiles_m, "TILES_N": tiles_n, "KTILES": ktiles, "CTAS": tiles_m * tiles_n * SPLIT_K,
            "KTILES_PER_SPLIT": ktiles // SPLIT_K,   # the shortest split
            "LOADS_PER_THREAD": cdiv(BM * BK // 8, threads) + cdiv(BN * BK // 8, threads),
            "REGS_EST": regs,
            "WORKSPACE_BYTES": SPLIT_K * p.M * p.N * 4 if SPLIT_K > 1 else 0,  # the launch block's workspace
            "RED_BLOCKS": cdiv(p.M * p.N, 8 * 256),   # splitk_reduce: 256 threads x 8 elements per CTA
        }

    def invalid(self, params: Params, p: Problem, lim: Limits) -> str | None:
        BM, BN, BK = params["BM"], params["BN"], params["BK"]
        WARPS_M, WARPS_N, STAGES, SPLIT_K = params["WARPS_M"], params["WARPS_N"], params["STAGES"], params["SPLIT_K"]
        d = self.context(params, p)
        if BM % WARPS_M or BN % WARPS_N or d["WM"] % 16 or d["WN"] % 16:
            return (f"warp tile {BM}/{WARPS_M} x {BN}/{WARPS_N} is not a multiple of 16x16 "
                    "(ldmatrix.x4 / mma m16n8k16 granularity)")
        if d["THREADS"] > 1024:
            return f"{d['THREADS']} threads per CTA exceed 1024"
        if d["LOADS_PER_THREAD"] > MAX_LOADS_PER_THREAD:
            return (f"{d['LOADS_PER_THREAD']} cp.async chunks per thread per stage: too few threads "
                    f"({d['THREADS']}) for a {BM}x{BN}x{BK} tile (max {MAX_LOADS_PER_THREAD})")
        reg_cap = min(MAX_REGS, lim.regs_per_sm // d["THREADS"])
        if d["REGS_EST"] > reg_cap:
            return (f"~{d['REGS_EST']} registers per thread (warp tile {d['WM']}x{d['WN']}: "
                    f"{d['WM'] * d['WN'] // 32} accumulators) exceed {reg_cap}")
        if d["SMEM_BYTES"] > lim.smem_per_block:
            return (f"shared memory {d['SMEM_BYTES']} B (pipeline {d['PIPE_BYTES']}, epilogue {d['EPI_BYTES']}) "
                    f"exceeds {lim.smem_per_block} B per block")
        if BM > 2 * cdiv(p.M, 64) * 64 or BN > 2 * cdiv(p.N, 64) * 64:
            return f"tile {BM}x{BN} is far larger than the {p.M}x{p.N} output"
        if SPLIT_K > 1:
            if p.K // SPLIT_K < BK:
                return f"SPLIT_K={SPLIT_K}: K/SPLIT_K = {p.K // SPLIT_K} is below BK={BK}"
            # Splits are whole BK tiles (split s owns tiles [s*T/S, (s+1)*T/S)), so every split starts
            # 16-byte aligned and only the last tile of the last split can be partial: K need not
            # be a multiple of SPLIT_K*8.
            if d["WORKSPACE_BYTES"] > MAX_WORKSPACE:
                return f"SPLIT_K={SPLIT_K}: {d['WORKSPACE_BYTES']} B of fp32 partials exceed {MAX_WORKSPACE} B"
        if STAGES > 2 and STAGES - 1 > d["KTILES_PER_SPLIT"]:
            return (f"STAGES={STAGES} never fills: a split has only {d['KTILES_PER_SPLIT']} K tiles "
                    f"(fewer stages do the same work with less smem)")
        return None

    # ---- prior: a crude time model, calibrated on two H100 runs (eval/check_family.py) --------
    # Per SM: the CTAs it runs (ceil(CTAs / SMs)), `r` of them resident at once. Each resident CTA
    # finishes one K tile per period = the largest of
    #   r x its MMA time (the block tile's FLOPs over soft efficiency factors for L2->smem
    #       intensity, smem->register intensity (warp tile) and resident warps);
    #   r x its load time: on H100 this kernel fetched about one 64- or 128-byte tile-row segment per
    #       ~1.9 ns per SM whatever BK was, so BK=32 moves half the bytes per row for the same cost
    #       (measured: BK=32 ran 25-35% slower than BK=64, and more stages did not close the gap);
    #   (load latency + MMA time) / (STAGES - 1): a tile's load is issued STAGES-1 tiles ahead.
    # Deeper rings beyond that buy nothing measurable (4 stages ran 12% slower than 3 at 4096^3),
    # so each stage costs a little. Split-K adds its partials round trip and a second launch.
    # Returned as the TFLOP/s it predicts.
    SM_TFLOPS = 4.5           # mma.sync fp16 throughput per SM (H100-class), TFLOP/s
    DRAM_TBPS = 3.0
    ROW_S = 1.94e-9           # per tile row (one BK-wide segment) loaded, per SM
    LATENCY_S = 0.5e-6        # global->smem latency of one tile
    BARRIER_S = 0.05e-6       # wait_group + __syncthreads + the fragment reload after it, per K tile
    CTA_FIXED_S = 1.0e-6      # pipeline fill + epilogue per CTA
    STAGE_COST = 0.02
    LAUNCH_S = 2.5e-6

    def occupancy(self, d: dict[str, Any], lim: Limits) -> int:
        """CTAs of one SM at a time, from the derived constants `d` (see `context`)."""
        return ctas_per_sm(d["SMEM_BYTES"], d["REGS_EST"], d["THREADS"], lim)

    def prior(self, params: Params, p: Problem, lim: Limits) -> float:
        d = self.context(params, p)
        BM, BN, BK, STAGES, SPLIT_K = params["BM"], params["BN"], params["BK"], params["STAGES"], params["SPLIT_K"]
        ctas = d["CTAS"]
        per_sm = cdiv(ctas, lim.sm_count)                    # CTAs on the busiest SM
        r = min(self.occupancy(d, lim), per_sm)       # resident together
        eff = (min(1.0, (BM * BN / (BM + BN)) / 80) ** 0.7                     # block tile intensity
               * min(1.0, (d["WM"] * d["WN"] / (d["WM"] + d["WN"])) / 32) ** 0.5   # warp tile intensity
               * min(1.0, r * d["THREADS"] / 32 / 8) ** 0.3)                    # warps to switch between
        mma_s = 2 * BM * BN * BK / (self.SM_TFLOPS * 1e12 * eff)             # one K tile, SM to itself
        load_s = (BM + BN) * self.ROW_S
        period = max(r * mma_s, r * load_s, (self.LATENCY_S + mma_s) / (STAGES - 1)) + self.BARRIER_S
        nkt = cdiv(d["KTILES"], SPLIT_K)
        t = cdiv(per_sm, r) * (nkt * period + self.CTA_FIXED_S)
        t = max(t, p.min_bytes / (self.DRAM_TBPS * 1e12)) + self.LAUNCH_S
        if SPLIT_K > 1:
            t += (2 * d["WORKSPACE_BYTES"] + 2 * p.M * p.N) / (self.DRAM_TBPS * 1e12) + self.LAUNCH_S
        if params["GROUP_M"] == 1 and d["TILES_M"] > 1 and d["TILES_M"] * d["TILES_N"] > lim.sm_count:
            t *= 1.03                                            # no L2 grouping on a multi-wave grid
        t *= 1 + self.STAGE_COST * STAGES
        return p.flops / t / 1e12


register(Sm80())
