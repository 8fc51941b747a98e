"""The stream family: decode GEMV (M <= 16) that streams B (the weights) with bulk copies.

Where the skinny family keeps B's bytes in flight in registers (16-byte loads from every lane),
here one producer warp per CTA moves whole row segments of B into a ring of shared-memory stages
with `cp.async.bulk` (the TMA unit's 1-D copy), the consumer warps multiply them on the tensor
cores (mma.sync m16n8k16, A as the 16-row operand) and issue no global loads. CTAs are persistent
(GRID of them) and stream a contiguous range of units (ROWS rows of B x KC k); with SPLIT_ROWS=1
the ranges are cut anywhere (stream-K for a GEMV: every CTA moves the same bytes), and a second
kernel, stream_fixup, sums in CTA order the partial tiles of row blocks cut between CTAs; with
SPLIT_ROWS=0 a CTA owns whole row blocks. A_RES=1 copies A once and keeps it in shared memory;
A_RES=0 copies A's k chunk with every stage (for A too large to keep). KSPLIT > 1 runs each of
those CTAs as a cluster of KSPLIT CTAs, each streaming one k slice of every unit, whose partial
tiles rank 0 sums (pushed with st.async into its shared memory): for B with fewer row blocks than
SMs (at M = 16, N ~ 1024), where one CTA per row block left SMs idle and copied all of A each.

The family renders contract v2 (docs/kernel-contract.md): a device-only file, one shape per
render, whose `/* cudal2-launch */` block launches `stream_gemv(A, B, C[, workspace])` and, when
some row block is cut, `stream_fixup(workspace, C)`. No host code. sm_90a only (bulk copies).

Covered: M in 1..16, any N, any K (a Problem's K is a multiple of 8: bulk copies move 16-byte
multiples).

Guarantees: `invalid` rejects, with a reason, M > 16, points whose shared memory does not fit,
A_RES with an A that does not fit, grids larger than the SMs can hold at once (a persistent grid
is one wave) or than the units, and pure waste (stages more than a CTA's units, k chunks far
longer than K, a second CTA per SM whose stages would not fit); every shape with M <= 16 and
K % 8 == 0 keeps a valid point (ROWS=8, KC=512, STAGES=2, A_RES=0, GRID=the SM count).
With SPLIT_ROWS=0 the grid is the fewest CTAs (at most GRID) that give none more row blocks than
GRID CTAs would; with KSPLIT > 1 it has no more clusters than are resident at once (the H100's
`Limits.cluster_slots`: 30 clusters of 4 at one CTA an SM, not 33).

Does not: measure anything (eval/skinny_check.py --family stream does). The prior is a bandwidth
model: bytes of B over a read bandwidth scaled by the bytes each SM keeps in flight, the busiest
CTA's share (SPLIT_ROWS=0 leaves up to one row block of imbalance), the copy unit's rate (~75
cycles a copy) and the fix-up's launch (~3 us), both read off the H100 checks, and the pipeline's
fill; its other constants are H100 SXM guesses.
Measured (eval/README.md): B at up to 2.94 TB/s (87.7% of the nominal peak, 97.6% of a copy's
read+write rate) at the 1 GB LM head, within +-2% of cuBLAS at M = 1 (1.022 at 1x4096x14336, 0.98
at 1x14336x4096), behind it at M = 16 except 16x4096x14336. With the k split (KSPLIT 2 and 4), at
the narrow M = 16 shapes: 16x1024x4096 1.21 and 16x512x3584 1.48 against F.linear in graph mode on
the product path; 16x1024x8192 and 16x3584x3584 won in the harness (1.08, 1.10) but lost there.
"""

from __future__ import annotations

import math
from typing import Any

from cudal2.kernels.family import Family, Limits, Params, cdiv, register
from cudal2.problem import Problem

MAX_M = 16


def _pad_row(nbytes: int) -> int:
    """A stage row's stride: 64 (mod 128) bytes, so a quarter-warp's 16-byte reads of rows g and
    g + 1 fall in 8 distinct bank groups (the template's pad_row)."""
    return cdiv(nbytes, 128) * 128 + 64


class Stream(Family):
    name = "stream"
    template = "stream.cu.j2"
    build_archs = ("sm_90a",)
    space = {
        "ROWS": (8, 16, 32),          # rows of B per row block (1, 2 or 4 m16n8 n-tiles)
        "KC": (512, 1024, 2048, 4096),   # k per unit: one bulk copy of KC*2 bytes per row and stage
        "STAGES": (2, 3, 4, 6),       # stages in flight per CTA
        "WARPS": (4, 8),              # consumer warps (plus one producer warp)
        "A_RES": (0, 1),              # 1: A copied once and kept in shared memory
        "SPLIT_ROWS": (1, 0),         # 1: ranges of units cut anywhere (+ fix-up kernel)
        "GRID": (132, 264),           # persistent CTAs: one or two per H100 SM
        # CTAs per cluster, each streaming one k slice of every unit, partial tiles summed in rank
        # 0's shared memory (st.async): more SMs on B where its row blocks are few, and each CTA
        # reads only its slice of A (at M = 16 as many bytes per k as 16 rows of B)
        "KSPLIT": (1, 2, 4),
    }

    def context(self, params: Params, p: Problem) -> dict[str, Any]:
        ROWS, KC, STAGES, WARPS, A_RES, SPLIT_ROWS, GRID = (
            params[k] for k in ("ROWS", "KC", "STAGES", "WARPS", "A_RES", "SPLIT_ROWS", "GRID"))
        KS = params.get("KSPLIT", 1)   # an entry made before the k split had none
        nt = ROWS // 8
        nrb, nkc = cdiv(p.N, ROWS), cdiv(p.K, KC)
        units = nrb * nkc
        # Whole row blocks: the fewest CTAs (clusters) that give none more blocks than GRID CTAs
        # (GRID / KS clusters) would (1024 blocks on 264 -> 256 CTAs of 4, not 232 of 4 and 32 of
        # 3), so all finish together: B's bandwidth, not an SM, is what each CTA waits on.
        workers = max(1, GRID // KS)
        if KS > 1:
            # A cluster sits inside one GPC, so fewer clusters than GRID / KS may be resident at once
            # (the H100: 30 of 4, not 33); one more would wait for a whole second wave, doubling the
            # time, so the grid stops at what is resident (Limits' table: sm_90a is the H100's)
            h100 = Limits()
            workers = min(workers, h100.resident_clusters(KS, cdiv(GRID, h100.sm_count)))
        ctas = min(workers, units) if SPLIT_ROWS else cdiv(nrb, cdiv(nrb, min(workers, nrb)))
        b_stride = _pad_row(KC // KS * 2)
        a_stride = _pad_row(p.K * 2) if A_RES else b_stride
        a_bytes = p.M * a_stride if A_RES else 0
        stage = ROWS * b_stride + (0 if A_RES else p.M * a_stride)
        red = WARPS * nt * 32 * 16

        def first_unit(c: int) -> int:   # the template's first_unit
            return c * units // ctas if SPLIT_ROWS else c * nrb // ctas * nkc
        fixup = any(first_unit(c) % nkc for c in range(1, ctas))
        most = max(first_unit(c + 1) - first_unit(c) for c in range(ctas))
        part = most // nkc * nt * 32 * 16 if KS > 1 else 0      # the template's PART_BYTES
        smem = (a_bytes + STAGES * stage + red + KS * part
                + (2 * STAGES + (nkc if A_RES else 0) + (KS > 1)) * 8)
        return {
            "NT": nt, "NRB": nrb, "NKC": nkc, "UNITS": units, "CTAS": ctas, "KSPLIT": KS,
            "THREADS": 32 * (WARPS + 1), "STAGE_BYTES": stage, "A_BYTES": a_bytes, "SMEM_BYTES": smem,
            "FIXUP": fixup, "WORKSPACE_BYTES": ctas * 2 * nt * 32 * 16 if fixup else 0,
            "UNITS_PER_CTA_MAX": most,
        }

    def invalid(self, params: Params, p: Problem, lim: Limits) -> str | None:
        if p.M > MAX_M:
            return f"M={p.M}: the stream family covers M <= {MAX_M} (one m16n8k16 row tile)"
        ROWS, KC, STAGES, GRID = params["ROWS"], params["KC"], params["STAGES"], params["GRID"]
        d = self.context(params, p)
        KS = d["KSPLIT"]
        if KS > 1:
            if params["A_RES"] or params["SPLIT_ROWS"]:
                return f"KSPLIT={KS}: a k split takes A with each stage (A_RES=0) and whole row blocks (SPLIT_ROWS=0)"
            if KC % (32 * KS):
                return f"KSPLIT={KS}: KC={KC} does not cut into slices of whole 32-k blocks"
            if cdiv(p.K, KC // KS) < KS:
                return f"KSPLIT={KS} with KC={KC}: K={p.K} leaves the last CTAs of a cluster no k at all"
            if d["NRB"] >= lim.sm_count:
                return (f"KSPLIT={KS}: {d['NRB']} row blocks already give every SM work; a k split is for B "
                        "with fewer row blocks than SMs")
        per_sm = cdiv(GRID, lim.sm_count)
        if GRID % lim.sm_count:
            return f"GRID={GRID} is not a whole number of CTAs per SM on {lim.sm_count} SMs"
        if per_sm * (d["SMEM_BYTES"] + 1024) > lim.smem_per_block + 1024:
            what = "the whole of A kept, " if params["A_RES"] else ""
            return (f"shared memory {d['SMEM_BYTES']} B ({what}{STAGES} stages of {d['STAGE_BYTES']} B) x {per_sm} "
                    f"CTA(s) per SM exceeds the SM's {lim.smem_per_block} B")
        if per_sm > 1 and d["CTAS"] * d["KSPLIT"] <= lim.sm_count:
            return f"GRID={GRID}: only {d['CTAS'] * d['KSPLIT']} CTAs have work; a second CTA per SM adds nothing"
        if STAGES > 2 and d["UNITS_PER_CTA_MAX"] < STAGES:
            return (f"STAGES={STAGES} never fill: a CTA streams at most {d['UNITS_PER_CTA_MAX']} units "
                    "(a smaller ring does the same)")
        if KC > 512 and KC >= 2 * p.K:
            return f"KC={KC} is more than twice K={p.K}: the stage is mostly empty"
        if ROWS > 8 and cdiv(p.N, 8) < ROWS // 8 * 2:
            return f"ROWS={ROWS} rows per block for N={p.N}: most CTAs would idle"
        return None

    # ---- prior: a bandwidth model (uncalibrated; H100 SXM guesses) -------------------------------
    HBM_BPS = 3.0e12          # read-stream bandwidth an H100 SXM reaches (of 3.35 TB/s peak)
    LATENCY_S = 1.2e-6        # DRAM latency under load
    LAUNCH_S = 2.0e-6
    FIXUP_S = 3.0e-6          # the fix-up's launch: SPLIT_ROWS=1 points with one read ~3 us slower (H100)
    COPY_S = 75 / 1.7e9       # an SM's copy unit: ~75 cycles a bulk copy (512-byte copies: ~1.5 TB/s)
    FILL_S = 1.5e-6           # first stage landing + the last row block's sums
    CLUSTER_S = 0.5e-6        # KSPLIT > 1: the pushes to rank 0 and its sums (a guess)
    SM_BPS = 100e9            # what one SM's copies pull from L2 (1x1024x4096: 64 CTAs of 136 KB in 4.0 us
                              # with the launch, so at least ~55 GB/s; the rest a guess)

    def prior(self, params: Params, p: Problem, lim: Limits) -> float:
        d = self.context(params, p)
        b_bytes = 2 * p.N * p.K
        # bytes in flight over the CTAs that stream (a grid smaller than the SMs keeps fewer),
        # against what the bandwidth needs at this latency (Little's law)
        streaming = d["CTAS"] * d["KSPLIT"]
        inflight = streaming * params["STAGES"] * d["STAGE_BYTES"]
        need = self.HBM_BPS * self.LATENCY_S
        bw = self.HBM_BPS * (1.0 - math.exp(-inflight / need))
        # the busiest CTA's bytes against the average: SPLIT_ROWS=0 deals out whole row blocks
        balance = d["UNITS_PER_CTA_MAX"] * d["CTAS"] / d["UNITS"]
        rows_per_unit = params["ROWS"] + (0 if params["A_RES"] else p.M)
        copies = d["UNITS_PER_CTA_MAX"] * rows_per_unit
        t_copies = copies * self.COPY_S / cdiv(params["GRID"], lim.sm_count)
        # the busiest CTA's bytes through its SM (B's rows and A's, or all of A kept): where few
        # CTAs stream (few row blocks), this, not HBM, is the time; a k split shares it out
        kcs = params["KC"] // d["KSPLIT"]
        per_cta = d["UNITS_PER_CTA_MAX"] * rows_per_unit * kcs * 2 + (p.M * p.K * 2 if params["A_RES"] else 0)
        t_sm = per_cta / self.SM_BPS * cdiv(params["GRID"], lim.sm_count)
        t = (max(b_bytes / bw * balance, t_copies, t_sm) + self.FILL_S + self.LAUNCH_S + (self.FIXUP_S if d["FIXUP"] else 0.0)
             + (self.CLUSTER_S if d["KSPLIT"] > 1 else 0.0))
        # A from L2: its chunk with every unit, or (kept) all of it once per CTA
        a_l2 = d["UNITS"] * p.M * params["KC"] * 2 if not params["A_RES"] else d["CTAS"] * p.M * p.K * 2
        t += a_l2 / 7.0e12
        return p.flops / t / 1e12


register(Stream())
