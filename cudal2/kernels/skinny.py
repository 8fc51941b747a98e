"""The skinny family: decode and skinny shapes (M <= 16), where C = A . B^T is a matrix-vector
product in disguise and the bar is HBM bandwidth, not cuBLAS. B (N x K, the weights) is streamed
exactly once with 16-byte `ld.global.nc.L1::no_allocate.L2::256B` loads, a register ring of
UNROLL 32-k blocks in flight per thread; A (M x K, tiny) is re-read from L1 or staged once per CTA
in shared memory; the dot products run on the tensor cores (mma.sync m16n8k16, fp32 accumulators,
A padded to 16 rows with zeros), with k permuted inside each 32-k block so that every lane's B
fragment is one 16-byte load. sm_80+ instructions only; built for sm_90a here.

Two warp layouts, chosen by A_SMEM:
- A_SMEM=0: a CTA owns WARP_N rows of B; its WARPS warps interleave over the CTA's K slice
  (32-k blocks w, w + WARPS, ...), read A straight from global memory through L1 (all warps
  and the CTAs resident on the SM walk K in the same order, so A stays hot there), and sum their
  partial tiles in shared memory in a fixed warp order;
- A_SMEM=1: a CTA owns WARPS x WARP_N rows of B; its warps all walk the same K slice, so the
  CTA stages that slice of A in shared memory once (cp.async, fragment-ordered, conflict-free)
  while the first B loads are already in flight; no reduction inside the CTA.
SPLIT_K > 1 splits K over grid.y; each split writes fp32 partials [SPLIT_K][M][N] to the workspace
and a second kernel sums them in a fixed order and rounds once to fp16 (no atomics: bitwise
deterministic).

The family renders contract v2 (docs/kernel-contract.md): a device-only file, one shape per
render, whose `/* cudal2-launch */` block (built from `context`, as literals) launches
`skinny_gemv(A, B, C)`, or with SPLIT_K > 1 `skinny_gemv(A, B, workspace)` then
`skinny_reduce(workspace, C)`. No host code.

Covered: M in 1..16 (rows past M are zero A rows and are never stored), any N (rows of B past N
are not loaded; odd N stores scalars), any K % 8 == 0 (the last 32-k block of the last split is
masked per 16-byte chunk).

Guarantees: `invalid` rejects, with a reason, M > 16, points the template cannot build or run
(shared memory of the A stage, registers and loads in flight per thread, empty K splits), and pure
waste (too few CTAs to keep the SMs streaming where the shape allows more, splits too short for
the warps or the ring, split-K where the row groups alone give many waves, a CTA far wider than N);
every shape with M <= 16 keeps a valid point: WARP_N=8, WARPS=4, UNROLL=2, A_SMEM=0 with the largest
SPLIT_K of the space that is at most K/128 (SPLIT_K=1 where the row groups alone are >= 8 per SM).
`context` gives the template the derived constants, which it re-derives and static_asserts.

Does not: measure anything. eval/skinny_check.py verified every point on the H100 (82/82) and
timed them at decode shapes (B at 69-93% of copy bandwidth, cuBLAS still faster: see
eval/README.md). The prior is an uncalibrated bandwidth model (bytes of B over HBM bandwidth
scaled by how many bytes each SM keeps in flight, plus launch, ring-fill, A staging and split-K
costs); its constants are H100 SXM guesses.
"""

from __future__ import annotations

import math
from typing import Any

from cudal2.kernels.family import MAX_REGS, Family, Limits, Params, cdiv, ctas_per_sm, register
from cudal2.problem import Problem

MAX_M = 16                   # one m16n8k16 row tile
REG_OVERHEAD = 32            # pointers, loop state, predicates beside the ring and accumulators
MAX_LOADS_PER_THREAD = 16    # 16-byte B loads in flight per thread (UNROLL x WARP_N / 8)
MAX_WORKSPACE = 1 << 30
KB = 32                      # k per block: one 16-byte chunk per lane quad (4 x 8 halves)


class Skinny(Family):
    name = "skinny"
    template = "skinny.cu.j2"
    build_archs = ("sm_90a",)
    space = {
        "WARP_N": (8, 16, 32),           # rows of B (output columns) per warp: 1, 2 or 4 m16n8 n-tiles
        "WARPS": (4, 8),                 # warps per CTA
        "SPLIT_K": (1, 2, 4, 8, 16),     # K slices over grid.y (> 1: fp32 workspace + reduction kernel)
        "UNROLL": (2, 4, 8),             # 32-k blocks in flight per thread (each: WARP_N/8 16-byte B loads)
        "A_SMEM": (0, 1),                # 1: warps split N and share an A slice staged in shared memory
    }

    def context(self, params: Params, p: Problem) -> dict[str, Any]:
        WARP_N, WARPS, SPLIT_K, UNROLL, A_SMEM = (params[k] for k in ("WARP_N", "WARPS", "SPLIT_K", "UNROLL", "A_SMEM"))
        nt = WARP_N // 8
        h = 2 if p.M > 8 else 1                      # A fragment halves: rows 0-7, and 8-15 when M > 8
        kblocks = cdiv(p.K, KB)
        cta_nt = nt * WARPS if A_SMEM else nt        # m16n8 n-tiles per CTA
        ngroups = cdiv(p.N, 8 * cta_nt)
        kb_split_max = cdiv(kblocks, SPLIT_K)
        kb_split_min = kblocks // SPLIT_K
        a_smem = kb_split_max * h * 512 if A_SMEM else 0       # [k block][half][lane] x 16 bytes
        red_smem = 0 if A_SMEM else WARPS * nt * 512           # [warp][n-tile][lane] x float4
        regs = 4 * UNROLL * nt + (0 if A_SMEM else 4 * UNROLL * h) + 4 * nt + REG_OVERHEAD
        return {
            "NT": nt, "H": h, "THREADS": 32 * WARPS, "KBLOCKS": kblocks,
            "CTA_NT": cta_nt, "CTA_COLS": 8 * cta_nt, "NGROUPS": ngroups, "CTAS": ngroups * SPLIT_K,
            "KB_SPLIT_MIN": kb_split_min, "KB_SPLIT_MAX": kb_split_max,
            # 32-k blocks one warp walks in the longest split
            "KB_WARP_MAX": kb_split_max if A_SMEM else cdiv(kb_split_max, WARPS),
            "A_SMEM_BYTES": a_smem, "RED_SMEM_BYTES": red_smem, "SMEM_BYTES": a_smem + red_smem,
            "LOADS_PER_THREAD": UNROLL * nt, "REGS_EST": regs,
            "WORKSPACE_BYTES": SPLIT_K * p.M * p.N * 4 if SPLIT_K > 1 else 0,
            "RED_BLOCKS": cdiv(p.M * p.N, 8 * 256),   # skinny_reduce: 256 threads x 8 elements per CTA
        }

    @staticmethod
    def _most_ctas(p: Problem) -> int:
        """The most CTAs a sensible point makes for `p`: one n-tile per CTA, up to 16 splits of at
        least 4 warps' worth of 32-k blocks each."""
        return cdiv(p.N, 8) * max(1, min(16, cdiv(p.K, KB) // 4))

    def invalid(self, params: Params, p: Problem, lim: Limits) -> str | None:
        WARP_N, WARPS, SPLIT_K, UNROLL, A_SMEM = (params[k] for k in ("WARP_N", "WARPS", "SPLIT_K", "UNROLL", "A_SMEM"))
        if p.M > MAX_M:
            return f"M={p.M}: the skinny family covers M <= {MAX_M} (one m16n8k16 row tile)"
        if WARP_N % 8 or WARP_N < 8:
            return f"WARP_N={WARP_N}: a warp owns whole m16n8 n-tiles (multiples of 8 rows of B)"
        d = self.context(params, p)
        if d["THREADS"] > 1024:
            return f"{d['THREADS']} threads per CTA exceed 1024"
        if d["LOADS_PER_THREAD"] > MAX_LOADS_PER_THREAD:
            return (f"UNROLL={UNROLL} x {d['NT']} n-tiles = {d['LOADS_PER_THREAD']} 16-byte B loads in flight per "
                    f"thread exceed {MAX_LOADS_PER_THREAD} (registers of the ring)")
        if d["REGS_EST"] > MAX_REGS:
            return f"~{d['REGS_EST']} registers per thread exceed {MAX_REGS}"
        if d["SMEM_BYTES"] > lim.smem_per_block:
            return (f"shared memory {d['SMEM_BYTES']} B (A slice {d['A_SMEM_BYTES']} B for {d['KB_SPLIT_MAX']} "
                    f"32-k blocks x {p.M} rows, reduction {d['RED_SMEM_BYTES']} B) exceeds {lim.smem_per_block} B per block")
        if SPLIT_K > d["KBLOCKS"]:
            return f"SPLIT_K={SPLIT_K}: K={p.K} has only {d['KBLOCKS']} 32-k blocks, so some splits would be empty"
        if SPLIT_K > 1:
            if not A_SMEM and d["KB_SPLIT_MIN"] < WARPS:
                return (f"SPLIT_K={SPLIT_K}: a split of {d['KB_SPLIT_MIN']} 32-k blocks leaves some of the {WARPS} "
                        "warps idle (K not divisible as needed)")
            if d["WORKSPACE_BYTES"] > MAX_WORKSPACE:
                return f"SPLIT_K={SPLIT_K}: {d['WORKSPACE_BYTES']} B of fp32 partials exceed {MAX_WORKSPACE} B"
            if d["NGROUPS"] >= 8 * lim.sm_count:
                return (f"SPLIT_K={SPLIT_K}: too many CTAs; the {d['NGROUPS']} row groups alone are "
                        f">= 8 per SM, so split-K only adds a workspace round trip and a launch")
        if UNROLL > 2 and d["KB_WARP_MAX"] < UNROLL:
            return (f"UNROLL={UNROLL} never fills: a warp walks at most {d['KB_WARP_MAX']} 32-k blocks "
                    "(a smaller ring does the same with fewer registers)")
        if d["CTA_NT"] > 1 and cdiv(p.N, 8) < d["CTA_NT"] // 2 + 1:
            return f"a CTA's {d['CTA_COLS']} rows of B are far more than N={p.N}"
        floor = min(lim.sm_count, self._most_ctas(p)) // 2
        if d["CTAS"] < floor:
            return (f"too few CTAs: {d['CTAS']} ({d['NGROUPS']} row groups x {SPLIT_K} splits) cannot keep "
                    f"{lim.sm_count} SMs streaming B; the shape allows at least {floor}")
        return None

    # ---- prior: a bandwidth model (uncalibrated; H100 SXM guesses) -------------------------------
    # Time = the larger of
    #   bytes of B / (HBM bandwidth x in-flight factor): x = the bytes of B each SM keeps in flight
    #       (resident CTAs x threads x loads per thread x 16 B) over what Little's law asks for
    #       (bandwidth per SM x load latency), factor = 1 - exp(-x): more in flight always helps a
    #       little (queues in the memory system are not ideal), with diminishing returns;
    #   the busiest SM's bytes at twice its fair share of the bandwidth (an SM with more CTAs
    #       than the others can pull more than 1/132 of it, but not without limit);
    #   the L2's traffic: B, plus A where it misses L1 (A_SMEM=0) or is staged per CTA (A_SMEM=1);
    # plus per-wave fixed costs (ring fill, the A stage, the reduction), the launch, and for
    # split-K the partials' round trip through L2 and a second launch. Returned as TFLOP/s.
    HBM_BPS = 3.0e12          # read-stream bandwidth an H100 SXM reaches (of 3.35 TB/s peak)
    L2_BPS = 7.0e12
    LATENCY_S = 1.0e-6        # DRAM load latency under load
    CTA_FIXED_S = 0.6e-6      # first loads landing + epilogue, per CTA wave
    L1_BYTES = 160 * 1024     # L1 left beside a small shared-memory carveout
    LAUNCH_S = 2.0e-6

    def occupancy(self, d: dict[str, Any], lim: Limits) -> int:
        """CTAs of one SM at a time, from the derived constants `d` (see `context`)."""
        return ctas_per_sm(d["SMEM_BYTES"], d["REGS_EST"], d["THREADS"], lim)

    def prior(self, params: Params, p: Problem, lim: Limits) -> float:
        d = self.context(params, p)
        A_SMEM, SPLIT_K = params["A_SMEM"], params["SPLIT_K"]
        b_bytes = 2 * p.N * p.K
        per_sm = cdiv(d["CTAS"], lim.sm_count)
        r = min(self.occupancy(d, lim), per_sm)
        inflight = r * d["THREADS"] * d["LOADS_PER_THREAD"] * 16
        need = self.HBM_BPS / lim.sm_count * self.LATENCY_S
        t_hbm = b_bytes / (self.HBM_BPS * (1.0 - math.exp(-inflight / need)))
        t_busiest = per_sm * (b_bytes / d["CTAS"]) / (2 * self.HBM_BPS / lim.sm_count)
        a_bytes = 2 * 16 * p.K if d["H"] == 2 else 2 * 8 * p.K   # the 16 (or 8) row A fragments
        if A_SMEM:
            a_l2 = d["CTAS"] * d["A_SMEM_BYTES"]
        else:
            hit = 0.9 if 2 * p.M * p.K <= self.L1_BYTES else 0.5
            a_l2 = (1 - hit) * d["NGROUPS"] * a_bytes
        t = max(t_hbm, t_busiest, (b_bytes + a_l2) / self.L2_BPS)
        waves = cdiv(per_sm, r)
        stage_s = d["A_SMEM_BYTES"] / 100e9 if A_SMEM else 0.0      # ~100 GB/s L2 -> one SM's smem
        t += waves * (self.CTA_FIXED_S + stage_s) + self.LAUNCH_S
        if SPLIT_K > 1:
            t += 2 * d["WORKSPACE_BYTES"] / self.L2_BPS + 2 * p.M * p.N / self.HBM_BPS + self.LAUNCH_S
        return p.flops / t / 1e12


register(Skinny())
