"""The sm90raw family: a Hopper HGEMM written by hand in inline PTX, not with the CUTLASS collective
builders: wgmma.mma_async m64nNk16 (N up to 256) fed from 128B-swizzled shared memory that TMA
(cp.async.bulk.tensor.2d) fills, an mbarrier ring of STAGES stages with full/empty barriers, one
producer warpgroup (setmaxnreg.dec) and 1-3 consumer warpgroups (setmaxnreg.inc), and a persistent
grid that walks the output tiles in grouped (GROUP_M) or generalized Hilbert order (ORDER). sm_90a
only.

The family renders contract v2 (docs/kernel-contract.md): a device-only file, one shape per
render, whose `/* cudal2-launch */` block asks the harness for the TMA descriptors (A and B with
box [64, BM] and [64, BN / CLUSTER], 128-byte swizzle; with EPI=tma also C) and launches
`sm90raw_hgemm` once on a grid of at most MAX_CTAS CTAs (clusters of CLUSTER). No host code. With
SPLIT_K > 1 or SCHED="streamk" the kernel takes the workspace instead of C, and a second launch,
`sm90raw_reduce`, writes C; the workspace size is declared in the launch block.

Covered: any M and N, K % 8 == 0 (the TMA unit zero-fills every out-of-bounds row and k; the
direct epilogue masks rows past M and columns past N, odd N falls back to scalar stores; the TMA
store clips); block tiles BM in {64, 128, 192, 256} split over 1-3 consumer warpgroups of 64 or
128 rows; BN any multiple of 16 from 64 to 256 (the odd widths, 80, 112, 160, 208..., are there
for wave quantization on 132 SMs); options:
- EPI="tma": stmatrix into swizzled staging + TMA store, overlapped with the next tile's mainloop
  (N % 8 == 0 only; costs BM x BN x 2 bytes of shared memory, so usually one stage less);
- CLUSTER=2: pairs of CTAs own vertically adjacent tiles and share B through TMA multicast;
- MAX_CTAS=128: a smaller persistent grid, in case 66 two-CTA clusters cannot all be resident;
- SPLIT_K in {2, 3, 4, 8}: work units are (item, split), split-major; each unit's fp32 partial tile
  goes to its own workspace slot ([BM][BN] floats, tile-contiguous, no atomics), and sm90raw_reduce
  adds a tile's splits in the fixed order 0..SPLIT_K-1 and rounds once: bitwise deterministic.
  Workspace: SPLIT_K x items x CLUSTER x BM x BN x 4 bytes (at most 1 GiB);
- SCHED="streamk": every worker (CTA or cluster) owns an equal run of the items x k-tiles
  iteration space; a run's segment of an item goes to slot (worker + item) (unique), and
  sm90raw_reduce adds an item's segments in worker order. Every tile goes through the workspace
  (no data-parallel first wave, no in-kernel fix-up with flags): simple and deterministic, and
  paid for in partials traffic, which the prior charges.
Both require EPI="direct" (the contract has no tensor map over the workspace).
- KSPLIT in {2, 4, 8}: a cluster of KSPLIT CTAs computes one tile, each CTA a k slice, and the fp32
  partials are reduce-scattered through distributed shared memory (st.async into the peers' rings,
  free once their mainloops end; each rank adds its column slice's partials in rank order and
  stores that slice): no workspace, no second launch, deterministic. One tile per cluster, so only
  where items x KSPLIT fit in one wave and every cluster is resident at once (`Limits.resident_clusters`:
  the H100 holds 15 clusters of 8 and 30 of 4 at one CTA an SM, twice that at two), with CLUSTER=1,
  SPLIT_K=1 and SCHED="tiles". Measured on the H100: faster than whole tiles of the same width
  where those leave SMs idle (128x8192x8192, 1024x1024x12288: 0.93 and 0.77-0.83 of the vendor
  against 0.88 and 0.68; results/sm90raw_ksplit_h100_2026-12-06.json); the exchange costs ~2.6 us
  and a 128x256 k slice runs at 0.81 us a k tile on 128 CTAs (the prior charges both). Faster than
  cuBLAS on thin shapes with 64-row tiles (results/sm90raw_ksplit8_h100_2026-12-06.json): 128x512x3584
  1.25 offline in clusters of 8 and 4; served at 2048x512x12288, 128x512x3584 and 128x1024x4096. At
  M = 128 with long K, where whole tiles re-read A once per tile column, 2 or 4 k slices of 128-row
  tiles serve four LLM layers at 1.05-1.16 of F.linear in graph mode (128x4096x14336, 128x3584x18944,
  128x8192x28672, 128x5120x27648; results/generate_ksplit_stream_h100_2026-12-06.log).
  Where B stays in L2 between back-to-back calls (64x1024x16384: 32 MB) cuBLAS gains more from
  it than the latency-bound split does, and the product bench's graph mode keeps such entries out.
- SCHED="hybrid": the items that fill whole waves as whole tiles (any epilogue), then one
  stream-K wave over the rest (`hybrid_sk_items`), fixed up in the kernel: a segment that does not
  start at k = 0 publishes its fp32 partial (flag: red.release.gpu), the tile's owner waits
  (ld.acquire.gpu) and adds the later segments in worker order, deterministic; stream-K segments
  walk k downwards so the workers share two k slices in L2, not one each. A first launch,
  sm90raw_clear, zeroes the flags in the workspace. Measured on the H100: +1.6% over whole tiles
  at 8192x8192x12288, even at 8192^3, a loss at 4096^3 and wherever a wave is short (the fix-up
  costs 20-40 us; the prior knows). The small-tile
path for thin, long-K shapes is BM=64 (one consumer warpgroup, one wgmma m64 per k16 step) with
BN=64..128 plus split-K, e.g. 128x1024x16384 as 64x64 tiles x 4 splits = 128 CTAs. A 32-row tile
is not offered: wgmma's M is 64 per warpgroup, so it would multiply 32 rows of zeros and be no
faster than 64 rows.

SWAP=1 lays the tiles over the transposed problem: the kernel computes C^T = B . A^T (A and B are both
K-major, so the launch block only trades their tensor maps) and the direct epilogue stores the
accumulator of row m, column n at C[n][m]. For tall outputs (M >> N, A streamed from HBM), where the
128-row side of a tile then spans all of N and the other side cuts A into slices one CTA (or one
k-split cluster) reads once, as 128x64 tiles in pairs do at the transposed layer 128x4096x14336.
Measured on the H100 at 4096x128x12288 (results/sm90raw_tall_h100_2026-12-07.json): swapped 128x64
tiles in pairs 43.8 us, the unswapped 64x128 tiles in pairs (one consumer) 43.8-44.0, both against
47.4 for the 64x64 tiles served before; the swap is within noise of its unswapped twin, and the
search published it (graph 1.09 against F.linear on the product path). Only with the direct
epilogue and no workspace or cluster pair (the TMA store, the reduction and the fix-up write C
row-major), and only where N < M (elsewhere the unswapped point with BM and BN traded is the same
work).

ORDER="hilbert" walks the items along a generalized Hilbert curve over the item grid (any
rectangle), computed in the kernel by descending to the part that holds an item (contract v2
refuses module constant data, so the walk cannot be a table).

Not covered yet (issue 12 lists them): clusters along N (A multicast; at M = 128, 64-row tiles in
B-sharing clusters, which re-read A as little, ran no faster than 128-row tiles: the H100 check
results/sm90raw_mid2_h100_2026-11-24.log), a TMA-store (or reduce-scatter in the cluster)
epilogue for the partials.

SCHED="pingpong": the two consumer warpgroups own whole BM x BN tiles (BM 64 or 128) and take the
CTA's items in turn, one's epilogue beside the other's mainloop; a turn barrier per consumer hands
the ring over item by item (its parity waits cannot tell a phase two laps back). Measured on the
H100 (results/sm90raw_pingpong_h100_2026-12-06.json): 128x128 ping-pong with the TMA store ran at
0.94-0.95 of the cooperative 128x256 tile at 4096^3-8192^3 (706 vs 747 TFLOP/s at 4096^3), on par at
2048^3, and first only where 128x256 tiles leave SMs idle (1024x2048x4096: 0.965 of the vendor); the
prior charges it accordingly. With the TMA store it needs N % BN == 0 (see `invalid`).

Guarantees: `invalid` rejects, with a reason, every point the template cannot build or run for
the shape (consumer row split, wgmma N, registers of one wgmma against the kernel-wide target and
accumulators against the setmaxnreg budget, shared memory, the C tensor map's 16-byte rows, a
cluster over a single tile row, split-K or stream-K with EPI=tma or with each other, a workspace
over 1 GiB), plus pure waste (a tile far larger than the problem, stages the whole run never
fills, a grid cap that changes nothing, splits or stream-K runs of fewer than 4 k tiles, split-K
when the tiles already fill the SMs twice, stream-K when the items divide evenly over the workers
or make more than 4 waves, a hybrid whose tiles would be cut into more than MAX_HYBRID_SEGMENTS
segments, and hybrid points the judge's machine-code check was found to refuse: one consumer with
EPI=tma or more than 64 accumulators); `context` gives the template the derived
constants, which it re-derives and static_asserts, so the launch block, the header and the kernel
agree or the build fails. Every point valid at 4096^3 (180 distinct kernels) was built with no
spills when this was written; split-K, stream-K and hybrid points were built with no spills and
run on the H100 (eval/sm90raw_check.py --thin, --hybrid).

Does not: measure anything (the GPU checks are eval/sm90raw_check.py). The prior is a throughput
model, calibrated on a few H100 checks (the epilogue, the hybrid's fix-up): it rewards full waves,
large tiles (shared-memory bandwidth per wgmma) and two or three consumer warpgroups, and charges
padding, the exposed epilogue, HBM streamed by too few CTAs, and the partials' round trip and
second launch of split-K and stream-K (so split-K wins where tiles alone leave SMs idle and K is
long).
"""

from __future__ import annotations

import itertools
from typing import Any

from cudal2.kernels.family import MAX_REGS, Family, Limits, Params, cdiv, ctas_per_sm, register
from cudal2.problem import Problem

BK = 64                        # halves per tile row: one 128-byte swizzle span
# setmaxnreg budgets per consumer count (CTA pool: 65536 registers at one CTA per SM; each value a
# multiple of 8, PRODUCER * 128 + CONSUMER * 128 * CONSUMERS <= 65536). With one consumer the
# 256-thread CTA already gets 255 registers per thread, so no reallocation is done.
REGS = {1: (255, 255), 2: (40, 232), 3: (24, 160)}    # consumers -> (producer, consumer)
REG_OVERHEAD = 40              # descriptors, addresses, loop state beside the accumulators
# ptxas checks each wgmma instruction against the kernel-wide register target (65536 / threads,
# from __launch_bounds__), not against the setmaxnreg.inc budget of the region it is in: one
# m64nNk16 needs its N/2 accumulators plus about 26 more ("Insufficient registers (128) ... target
# of 130" for N = 208 at 512 threads). Whole-region pressure may go up to the setmaxnreg budget.
INSTR_OVERHEAD = 28
BARRIER_BYTES = 16             # full + empty mbarrier per stage
ALIGN_SLACK = 1024             # the template aligns the dynamic smem base up to 1024 bytes
RED_THREADS = 256              # sm90raw_reduce: threads per CTA, 8 output elements each
MAX_WORKSPACE = 1 << 30        # fp32 partials beyond this are never worth it
MIN_KTILES_PER_UNIT = 4        # a split or stream-K run shorter than this never fills the ring
MAX_HYBRID_SEGMENTS = 5        # SCHED="hybrid": the most segments of a tile its owner adds in turn


def hybrid_sk_items(items: int, workers: int) -> int:
    """The items SCHED="hybrid" cuts over its stream-K wave: the last partial wave, or that plus the
    last full one when the partial wave alone would give each worker less than half an item (a
    tile would then be summed from many short segments, each partial tile a round trip)."""
    rest = items % workers
    return rest if 2 * rest >= workers or items < workers + rest else rest + workers


class Sm90Raw(Family):
    name = "sm90raw"
    template = "sm90raw.cu.j2"
    build_archs = ("sm_90a",)
    walk_params = ("GROUP_M", "ORDER")
    tuning_params = ("GROUP_M", "ORDER", "MAX_CTAS")   # MAX_CTAS: 128 or 132 persistent CTAs
    plan_params = ("BM", "BN", "SPLIT_K", "SCHED", "KSPLIT")
    space = {
        "BM": (128, 64, 192, 256),
        "BN": (128, 64, 80, 96, 112, 144, 160, 176, 192, 208, 224, 240, 256),
        "CONSUMERS": (2, 1, 3),
        "STAGES": (4, 3, 5, 6, 8),
        "GROUP_M": (8, 1, 4, 16),
        # the walk over the output's items: GROUP_M-row strips, or a generalized Hilbert curve
        "ORDER": ("grouped", "hilbert"),
        # "direct": stores from the accumulators; "tma": stmatrix into swizzled staging + TMA store,
        # overlapped with the next tile's mainloop (needs N % 8 == 0 for the C tensor map)
        "EPI": ("direct", "tma"),
        # CTAs per cluster along M; 2: the pair shares B through TMA multicast
        "CLUSTER": (1, 2),
        # the persistent grid's size cap: 132 = every SM of an H100 SXM; 128 leaves room for GPCs
        # that cannot host every 2-CTA cluster at once
        "MAX_CTAS": (132, 128),
        # split-K: the k tiles cut into SPLIT_K splits, fp32 partials through the workspace, then
        # sm90raw_reduce sums them in a fixed order (thin, long-K shapes whose tiles cannot fill the SMs)
        "SPLIT_K": (1, 2, 3, 4, 8),
        # "tiles": whole items per CTA (with SPLIT_K); "streamk": every CTA an equal run of all the k-tile
        # iterations, partial tiles fixed up by sm90raw_reduce (against wave quantization); "hybrid":
        # whole items for the full waves, then one stream-K wave over the rest, fixed up in the kernel;
        # "pingpong": whole tiles, but each of the two consumer warpgroups owns whole BM x BN tiles and
        # they take the CTA's items in turn, so one's epilogue overlaps the other's mainloop
        "SCHED": ("tiles", "streamk", "hybrid", "pingpong"),
        # the k split inside a cluster: KSPLIT CTAs compute one tile, each a k slice, and reduce-scatter
        # their fp32 partials through distributed shared memory (each stores one column slice); for
        # outputs with too few wide tiles to fill the SMs, one item per cluster (8: thin shapes whose
        # 64x64 tiles number 16 or fewer, e.g. 128x512x3584; 8 is the portable cluster's limit)
        "KSPLIT": (1, 2, 4, 8),
        # 1: the kernel computes C^T = B . A^T, its tiles laid over the transposed problem (N x M): A and
        # B are both K-major, so the operands only trade tensor maps, and the direct epilogue stores
        # each accumulator at C[col][row]. For tall outputs (M >> N, A streamed from HBM), where the
        # 128-row side of a tile then spans all of N (B, read by every CTA from L2) and the 64-wide
        # side cuts A into slices each CTA reads once
        "SWAP": (0, 1),
    }

    _structural: list[Params] | None = None      # points(), computed once per process

    def points(self) -> list[Params]:
        """The space's points less those `_param_rules` refuses, which no shape makes valid (all but
        about 1 in 30 of the product: consumer row splits, ping-pong's shapes, Hilbert order with a
        GROUP_M, splits under another scheduler, the k split beside anything but whole tiles): every
        shape's ranking walks this list, so the product is filtered once, not once per shape (a
        shape's ranking went from ~20 s to ~6 s here). Copies: callers may edit them."""
        if self._structural is None:
            keys = [k for k in self.space if k != "SWAP"]
            every = (dict(zip(keys, v)) for v in itertools.product(*(self.space[k] for k in keys)))
            base = [{**x, "SWAP": 0} for x in every if self._param_rules(x) is None]
            # (SWAP is the last parameter and its rules only narrow the others: its points are the
            # unswapped ones it allows, so the product is not walked twice)
            type(self)._structural = base + [{**x, "SWAP": 1} for x in base if self._param_rules({**x, "SWAP": 1}) is None]
        return [dict(x) for x in self._structural]

    def frame(self, params: Params, p: Problem) -> Problem:
        """The problem the point's tiles are laid over: `p`, or with SWAP=1 its transpose (N x M)."""
        return Problem(p.N, p.M, p.K) if params.get("SWAP", 0) else p

    def context(self, params: Params, p: Problem) -> dict[str, Any]:
        """The derived constants of the point's tiles over its frame, with the caller's output shape
        (C_M x C_N) beside them: the declared shape, and with SWAP the row length of C's stores."""
        return {**self._context(params, self.frame(params, p)), "SWAP": params.get("SWAP", 0), "C_M": p.M, "C_N": p.N}

    def _context(self, params: Params, p: Problem) -> dict[str, Any]:
        BM, BN, C, STAGES = params["BM"], params["BN"], params["CONSUMERS"], params["STAGES"]
        CL, EPI = params["CLUSTER"], params["EPI"]
        # a point recorded before these parameters existed meant no split and whole tiles
        S, sched = params.get("SPLIT_K", 1), params.get("SCHED", "tiles")
        ks = params.get("KSPLIT", 1)
        pingpong = sched == "pingpong"
        wg_m = BM if pingpong else BM // C             # ping-pong: each consumer owns whole tiles
        tiles_m, tiles_n = cdiv(p.M, BM), cdiv(p.N, BN)
        tiles = tiles_m * tiles_n
        items = cdiv(tiles_m, CL) * tiles_n            # a work item: CL vertically adjacent tiles
        ktiles = cdiv(p.K, BK)
        stage = (BM + BN) * BK * 2
        epi = C * wg_m * BN * 2 if EPI == "tma" else 0   # a staging area per consumer
        prod, cons = REGS.get(C, (0, 0))
        units = items * S                              # split-K: (item, split) pairs
        sk_items = dp_items = flags = 0
        if sched == "hybrid":
            grid = params["MAX_CTAS"] // CL * CL
            workers = grid // CL
            sk_items = hybrid_sk_items(items, workers)
            dp_items = items - sk_items
            slots = (workers + sk_items - 1) * CL      # slot (w + sk) * CL + rank per stream-K segment
            flags = slots * C                          # one per slot and consumer warpgroup
            per_cta_ktiles = dp_items // workers * ktiles + cdiv(sk_items * ktiles, workers)
        elif sched == "streamk":
            grid = params["MAX_CTAS"] // CL * CL       # every SM, each an equal run of iterations
            workers = grid // CL
            slots = (workers + items - 1) * CL         # slot (w + item) * CL + rank per segment
            per_cta_ktiles = cdiv(items * ktiles, workers)
        elif ks > 1:
            grid = items * ks                          # one item per cluster: the rules keep it in one wave
            workers = items
            slots = 0
            per_cta_ktiles = cdiv(ktiles, ks)
        else:
            grid = min(units * CL, params["MAX_CTAS"] // CL * CL)
            workers = grid // CL
            slots = units * CL if S > 1 else 0
            per_cta_ktiles = cdiv(units, workers) * cdiv(ktiles, S)
        ws = S > 1 or sched == "streamk"               # partials only: sm90raw_reduce writes C
        fixup = sched == "hybrid"                      # partials fixed up in the kernel, which writes C
        flag_offset = slots * BM * BN * 4
        return {
            "ORDER": params.get("ORDER", "grouped"),
            "SPLIT_K": S, "SCHED": sched, "PINGPONG": pingpong, "KSPLIT": ks,
            # the k split's exchange: the fp32 partials of its column slice a CTA receives from its peers
            "XS_BYTES": (ks - 1) * BM * (BN // ks) * 4, "WS": ws, "FIXUP": fixup, "UNIT_LOOP": ws or fixup,
            "UNITS": units, "WORKERS": workers,
            "TOTAL_ITERS": items * ktiles, "PER_CTA_KTILES": per_cta_ktiles,
            "SK_ITEMS": sk_items, "DP_ITEMS": dp_items, "FLAGS": flags, "FLAG_OFFSET": flag_offset,
            # the most segments one stream-K tile is cut into (its owner adds all but its own)
            "SEGMENTS": cdiv(workers, sk_items) + 1 if fixup else 0,
            "CLEAR_BLOCKS": cdiv(flags, RED_THREADS),
            "WS_BYTES": flag_offset + cdiv(flags * 4, 16) * 16, "RED_THREADS": RED_THREADS,
            "RED_BLOCKS": cdiv(tiles * BM * BN // 8, RED_THREADS),
            "BK": BK, "THREADS": 128 * (1 + C), "WG_M": wg_m, "M_SUB": wg_m // 64, "ACC": (wg_m // 64) * BN // 2,
            "STAGE_BYTES": stage, "EPI_BYTES": epi,
            # (+16: ping-pong's two turn barriers, or the k split's free and recv barriers)
            "SMEM_BYTES": STAGES * stage + epi + STAGES * BARRIER_BYTES + 16 * (pingpong or ks > 1) + ALIGN_SLACK,
            # the TMA-store box: the widest of 64/32/16 columns dividing BN (with a k split, BN / KSPLIT,
            # the columns each rank stores) (its swizzle = 2 bytes x that)
            "EPI_COLS": next((w for w in (64, 32, 16) if (BN // ks) % w == 0), 8),
            "TILES_M": tiles_m, "TILES_N": tiles_n, "TILES": tiles, "ITEMS": items,
            "GRID": grid,
            "KTILES": ktiles, "PRODUCER_REGS": prod, "CONSUMER_REGS": cons,
            # the wgmma asm's accumulator operands %0..%(BN/2-1) and their "+f" bindings, 8 or 16 a line
            "WGMMA_D": [", ".join(f"%{i}" for i in range(j, min(j + 16, BN // 2))) + ("," if j + 16 < BN // 2 else "")
                        for j in range(0, BN // 2, 16)],
            "WGMMA_D_BIND": [", ".join(f'"+f"(d[{i}])' for i in range(j, min(j + 8, BN // 2)))
                             + ("," if j + 8 < BN // 2 else "") for j in range(0, BN // 2, 8)],
        }

    def _param_rules(self, params: Params) -> str | None:
        """The rules that read the point alone, whatever the shape: `invalid` applies them first and
        `points` leaves out what they refuse."""
        BM, BN, C = params["BM"], params["BN"], params["CONSUMERS"]
        S, sched, ks = params.get("SPLIT_K", 1), params.get("SCHED", "tiles"), params.get("KSPLIT", 1)
        if ks != 1 and (params["CLUSTER"] != 1 or S != 1 or sched != "tiles"
                        or params["MAX_CTAS"] != self.space["MAX_CTAS"][0]):
            return (f"KSPLIT={ks}: the cluster is the k split (CLUSTER=1), whole tiles one per cluster "
                    "(SCHED=tiles, SPLIT_K=1, and the default MAX_CTAS)")
        if C not in REGS:
            return f"CONSUMERS={C}: 1 to 3 consumer warpgroups"
        if sched == "pingpong":
            if C != 2:
                return f"SCHED=pingpong: two consumer warpgroups take the tiles in turn, not {C}"
            if BM not in (64, 128):
                return f"SCHED=pingpong: each consumer owns a whole tile of 64 or 128 rows, not BM={BM}"
        elif BM % C or BM // C not in (64, 128):
            return (f"BM={BM} over {C} consumer warpgroup(s): each must own 64 or 128 rows "
                    "(one or two wgmma m64 tiles)")
        if BN % 8 or not 8 <= BN <= 256:
            return f"BN={BN}: wgmma m64nNk16 needs N a multiple of 8, at most 256"
        if params.get("ORDER", "grouped") not in self.space["ORDER"]:
            return f"ORDER={params['ORDER']!r}: one of {self.space['ORDER']}"
        if params.get("ORDER") == "hilbert" and params["GROUP_M"] != self.space["GROUP_M"][0]:
            return (f"ORDER=hilbert ignores GROUP_M={params['GROUP_M']} "
                    f"(the same kernel as GROUP_M={self.space['GROUP_M'][0]})")
        if S not in self.space["SPLIT_K"]:
            return f"SPLIT_K={S}: one of {self.space['SPLIT_K']}"
        if sched not in self.space["SCHED"]:
            return f"SCHED={sched!r}: one of {self.space['SCHED']}"
        if sched == "pingpong" and S > 1:
            return f"SCHED=pingpong: the consumers take whole tiles in turn, so SPLIT_K must be 1, not {S}"
        if sched != "tiles" and S > 1:
            return f"SCHED={sched} already cuts K over the CTAs: SPLIT_K must be 1, not {S}"
        swap = params.get("SWAP", 0)
        if swap not in self.space["SWAP"]:
            return f"SWAP={swap}: one of {self.space['SWAP']}"
        if swap and (params["EPI"] != "direct" or S > 1 or sched not in ("tiles", "pingpong") or params["CLUSTER"] != 1):
            # the transposed stores are the direct epilogue's; the TMA store, the workspace's
            # reduction and the hybrid's fix-up write C row-major, and a tall output's frame has
            # too few tile rows for a cluster along them
            return ("SWAP=1 stores C transposed from the accumulators: EPI=direct, SPLIT_K=1, SCHED tiles or "
                    "pingpong, CLUSTER=1")
        return None

    def invalid(self, params: Params, p: Problem, lim: Limits) -> str | None:
        why = self._param_rules(params)
        if why:
            return why
        if params.get("SWAP", 0) and p.N >= p.M:
            return (f"SWAP=1 at {p}: N >= M, so the unswapped point with BM and BN traded does the same work "
                    "and stores C in contiguous pairs")
        return self._invalid(params, self.frame(params, p), lim)

    def _invalid(self, params: Params, p: Problem, lim: Limits) -> str | None:
        """`invalid`'s shape rules, over the frame `p`."""
        BM, BN, C, STAGES = params["BM"], params["BN"], params["CONSUMERS"], params["STAGES"]
        if params.get("SCHED") == "pingpong" and params["EPI"] == "tma" and p.N % BN:
            # surveyed 2026-12-06 (the PINGPONG points of eval/sm90raw_check.py at 13 shapes): with a
            # partial last tile column ptxas puts the C descriptor's address through an R2UR
            # uniformity loop whose predicate the judge's machine-code check refuses (as the
            # hybrid's one-consumer TMA store); every point with N % BN == 0 built clean
            return (f"SCHED=pingpong with EPI=tma and N % BN = {p.N % BN}: ptxas turns the edge's store "
                    "into code the judge's machine-code check refuses; EPI=direct, or a BN dividing N")
        d = self._context(params, p)
        target = min(255, 65536 // d["THREADS"] // 8 * 8)
        if BN // 2 + INSTR_OVERHEAD > target:
            return (f"one wgmma m64n{BN}k16 needs ~{BN // 2 + INSTR_OVERHEAD} registers, above ptxas's "
                    f"{target}-register target for {d['THREADS']} threads")
        if d["ACC"] + REG_OVERHEAD > d["CONSUMER_REGS"]:
            return (f"{d['ACC']} fp32 accumulators per consumer thread ({d['WG_M']}x{BN} per warpgroup) do not fit "
                    f"in {d['CONSUMER_REGS']} registers with {C} consumer warpgroup(s)")
        if d["SMEM_BYTES"] > lim.smem_per_block:
            return (f"shared memory {d['SMEM_BYTES']} B ({STAGES} stages of {d['STAGE_BYTES']} B) exceeds "
                    f"{lim.smem_per_block} B per block")
        if BM > 2 * cdiv(p.M, 64) * 64 or BN > 2 * cdiv(p.N, 64) * 64:
            return f"tile {BM}x{BN} is far larger than the {p.M}x{p.N} output"
        if params["EPI"] == "tma" and p.N % 8:
            return f"EPI=tma: the C tensor map needs rows of 16-byte multiples (N % 8 == 0), N={p.N}"
        if params["EPI"] == "tma" and BN % 16:
            return f"EPI=tma: stmatrix.x4 writes 16-column groups, BN={BN}"
        CL = params["CLUSTER"]
        if CL not in (1, 2):
            return f"CLUSTER={CL}: 1 or 2 CTAs per cluster"
        if CL > 1 and (BN // CL) % 8:
            return f"CLUSTER={CL}: each CTA multicasts BN/{CL} = {BN // CL} rows of B, not a multiple of 8"
        if CL > 1 and d["TILES_M"] < CL:
            return f"CLUSTER={CL} along M: the {p.M}-row output has only {d['TILES_M']} tile row(s) of {BM}"
        if params["MAX_CTAS"] > lim.sm_count:
            return f"MAX_CTAS={params['MAX_CTAS']} exceeds the {lim.sm_count} SMs: a persistent grid is one wave"
        why = self._invalid_split(params, p, lim, d) or self._invalid_ksplit(params, p, lim, d)
        if why:
            return why
        if (params["MAX_CTAS"] != self.space["MAX_CTAS"][0] and d["SCHED"] in ("tiles", "pingpong")
                and d["UNITS"] * CL <= params["MAX_CTAS"]):
            return (f"MAX_CTAS={params['MAX_CTAS']} changes nothing here: {d['UNITS'] * CL} CTAs "
                    f"(the same kernel as MAX_CTAS={self.space['MAX_CTAS'][0]})")
        per_cta = d["PER_CTA_KTILES"]
        if STAGES > 3 and STAGES > per_cta:
            return (f"STAGES={STAGES} never fills: a CTA loads only {per_cta} k tiles in all "
                    "(fewer stages do the same work with less smem)")
        return None

    @staticmethod
    def _regs_est(params: Params, d: dict[str, Any]) -> int:
        """Registers a thread holds, for residency. Two or three consumers: setmaxnreg's split (REGS),
        averaged over the CTA's threads. One consumer sets no split, so the compiled count: the
        accumulators plus 64, a margin over what ptxas gave (64x64: 80 compiled, this says 96;
        64x128: 128-132, this says 128)."""
        C = params["CONSUMERS"]
        if C > 1:
            prod, cons = REGS[C]
            return -(-(prod + C * cons) // (1 + C))
        return min(MAX_REGS, d["ACC"] + 64)

    def _invalid_ksplit(self, params: Params, p: Problem, lim: Limits, d: dict[str, Any]) -> str | None:
        """The rules of the k split inside a cluster (KSPLIT > 1)."""
        ks, BN = d["KSPLIT"], params["BN"]
        if ks == 1:
            return None
        if ks not in self.space["KSPLIT"]:
            return f"KSPLIT={ks}: one of {self.space['KSPLIT']}"
        if d["GRID"] > params["MAX_CTAS"]:
            return (f"KSPLIT={ks}: {d['ITEMS']} tiles x {ks} CTAs exceed the {params['MAX_CTAS']}-CTA wave "
                    "(the exchange reuses the ring, so a cluster takes one tile)")
        # The whole grid must be resident at once (a cluster's one tile, no second wave): the H100 holds
        # 15 clusters of 8 at one CTA an SM, 30 at two (measured: 64x64 tiles in 16 clusters of 8 ran at
        # 0.77 of the vendor with 8 stages, one CTA an SM, and 1.06 with 6, two CTAs an SM)
        per_sm = ctas_per_sm(d["SMEM_BYTES"], self._regs_est(params, d), d["THREADS"], lim)
        resident = lim.resident_clusters(ks, per_sm)
        if d["ITEMS"] > resident:
            return (f"KSPLIT={ks}: {d['ITEMS']} clusters of {ks}, but at {per_sm} CTA(s) an SM only "
                    f"{resident} are resident at once (a cluster stays in one GPC)")
        if BN % (8 * ks):
            return f"KSPLIT={ks}: BN={BN} does not cut into {ks} column slices of whole 8-column groups"
        if params["EPI"] == "tma" and (BN // ks) % 16:
            return f"KSPLIT={ks} with EPI=tma: a rank's {BN // ks} columns are not whole 16-column stmatrix groups"
        if d["KTILES"] // ks < MIN_KTILES_PER_UNIT:
            return (f"KSPLIT={ks}: a rank gets {d['KTILES'] // ks} k tiles of {BK} (K={p.K}), fewer than "
                    f"{MIN_KTILES_PER_UNIT}: the pipeline never fills")
        if d["XS_BYTES"] > params["STAGES"] * d["STAGE_BYTES"]:
            return (f"KSPLIT={ks}: the {d['XS_BYTES']} B a rank receives do not fit in its "
                    f"{params['STAGES']}-stage ring")
        return None

    def _invalid_split(self, params: Params, p: Problem, lim: Limits, d: dict[str, Any]) -> str | None:
        """The rules of split-K and stream-K (both send fp32 partial tiles through the workspace)."""
        S, CL = d["SPLIT_K"], params["CLUSTER"]
        if d["FIXUP"]:
            if d["ITEMS"] % d["WORKERS"] == 0:
                return (f"SCHED=hybrid: the {d['ITEMS']} items divide evenly over the {d['WORKERS']} workers "
                        "already (no partial wave to spread)")
            if d["SK_ITEMS"] * d["KTILES"] < MIN_KTILES_PER_UNIT * d["WORKERS"]:
                return (f"SCHED=hybrid: the stream-K wave's {d['SK_ITEMS'] * d['KTILES']} k tiles over "
                        f"{d['WORKERS']} workers are fewer than {MIN_KTILES_PER_UNIT} each: the pipeline never fills")
            if d["WS_BYTES"] > MAX_WORKSPACE:
                return f"SCHED=hybrid: {d['WS_BYTES']} B of fp32 partials exceed {MAX_WORKSPACE} B"
            if params["CONSUMERS"] == 1 and (params["EPI"] == "tma" or d["ACC"] > 64):
                # surveyed 2026-11-24 (50 renders): every such render failed the judge's machine-code
                # check, either the C descriptor's address through an R2UR uniformity loop (paramflow
                # refuses a branch on it) or a 255-register function that nvdisasm 13.2 cannot list
                # with life ranges (the check fails closed); two consumers, or one with the direct
                # epilogue and at most 64 accumulators, built clean
                return (f"SCHED=hybrid with one consumer warpgroup, EPI={params['EPI']} and {d['ACC']} accumulators "
                        "per thread: ptxas turns the fix-up into code the judge's machine-code check refuses; "
                        "use two consumers, or EPI=direct with at most 64 accumulators")
            if d["SEGMENTS"] > MAX_HYBRID_SEGMENTS:
                return (f"SCHED=hybrid: {d['SK_ITEMS']} items over {d['WORKERS']} workers cut a tile into up to "
                        f"{d['SEGMENTS']} segments, which its owner would add one after another; "
                        "SCHED=streamk or SPLIT_K reduce in parallel")
            return None
        if not d["WS"]:
            return None
        what = f"SPLIT_K={S}" if S > 1 else "SCHED=streamk"
        if params["EPI"] != "direct":
            return (f"{what}: the partials are fp32 tiles in the workspace, which has no tensor map "
                    "(the contract encodes maps over A, B and C only), so EPI must be direct")
        if d["WS_BYTES"] > MAX_WORKSPACE:
            return f"{what}: {d['WS_BYTES']} B of fp32 partials exceed {MAX_WORKSPACE} B"
        if S > 1:
            if d["KTILES"] // S < MIN_KTILES_PER_UNIT:
                return (f"SPLIT_K={S}: a split gets {d['KTILES'] // S} k tiles of {BK} (K={p.K}), fewer than "
                        f"{MIN_KTILES_PER_UNIT}: the pipeline never fills; fewer splits")
            if d["ITEMS"] * CL >= 2 * lim.sm_count:
                return (f"SPLIT_K={S}: the {d['ITEMS'] * CL} tiles already fill {lim.sm_count} SMs twice; "
                        "splitting K only adds partials traffic")
        else:
            if d["TOTAL_ITERS"] < MIN_KTILES_PER_UNIT * d["WORKERS"]:
                return (f"SCHED=streamk: {d['TOTAL_ITERS']} k tiles over {d['WORKERS']} workers is fewer than "
                        f"{MIN_KTILES_PER_UNIT} each: the pipeline never fills")
            if d["ITEMS"] % d["WORKERS"] == 0:
                return (f"SCHED=streamk: the {d['ITEMS']} items divide evenly over the {d['WORKERS']} workers "
                        "already (no wave quantization to fix)")
            if d["ITEMS"] > 4 * d["WORKERS"]:
                return (f"SCHED=streamk: {d['ITEMS']} items are over 4 waves of {d['WORKERS']}; the last partial "
                        "wave costs less than sending every tile through the workspace")
        return None

    # ---- prior: an uncalibrated time model (TFLOP/s it predicts) ---------------------------------
    # Per CTA (one per SM), each output tile takes its k tiles at the wgmma rate, discounted by the
    # shared-memory bandwidth a narrow tile needs (both operands come from smem: bytes per FLOP fall
    # as BM*BN/(BM+BN) grows), by a single consumer warpgroup (nothing issues while it waits) and by
    # a shallow ring, plus the epilogue (exposed for EPI=direct, mostly hidden for EPI=tma). The
    # busiest CTA does ceil(items / clusters) tiles. A 2-CTA cluster halves B's L2 traffic. The
    # whole run cannot beat reading the operands once from HBM, which takes at least DRAM_CTAS CTAs
    # to saturate (a thin shape on 16 CTAs streams far below 3 TB/s: that is what split-K fixes).
    # Split-K and stream-K: the busiest CTA's share of the k tiles, an fp32 epilogue per unit or
    # segment, the partials written and read back at HBM rate, and the reduction's launch.
    SM_TFLOPS = 989.0 / 132 * 0.85    # dense fp16 wgmma peak per SM, less clock/power throttling
    DRAM_TBPS = 3.0
    DRAM_CTAS = 66                    # CTAs (SMs) it takes to saturate HBM; fewer stream proportionally less
    # Storing one output element from registers, per SM (exposed). Calibrated on the H100
    # (results/sm90raw_check_h100_2026-11-23.json, 128x256 tiles at 4096^3 and 8192^3): the direct
    # epilogue at 4 stages ran at 711/740 TFLOP/s, the overlapped TMA-store one at 3 stages at
    # 779/812, about 10% of the tile's time; 0.35e-12 made it 4% and ranked every direct point first.
    EPI_S_PER_ELEM = 1.0e-12 * 132
    LAUNCH_S = 3e-6
    # The hybrid's fix-up, as an effective rate for its partial tiles: calibrated on the H100
    # (results of 2026-11-24, 128x256 tiles, row-major partials): the stream-K wave cost 20-40 us
    # more than its balance saved (at 4096^3 and 2048x8192x8192 ~20 us, which 5.5 TB/s of L2 put at 9);
    # what is not traffic is the two k slices in flight instead of one, and the segment boundaries.
    # Since the partials are kept in accumulator order (whole lines per warp), the per-unit timeline
    # at 4096^3 (results/timeline_hybrid_h100_2026-12-06.json) puts the hybrid's overhead over a
    # perfectly balanced schedule at ~14.5 us, down from ~23.5 (the rate below was 2.2 TB/s, which
    # modelled the 23.5): the publish 3.5 us, the owner's read-and-add 3 us, the rest a slower first
    # whole tile (the last call's dirty partials written back under it).
    L2_TBPS = 3.6
    # A CTA keeps at most STAGES k tiles in flight, so (Little's law) it takes at least
    # LOAD_LATENCY_S / STAGES per k tile, whatever the tile's size. Calibrated on the H100 at M = 128
    # (results/sm90raw_mid*_h100_2026-11-24.log, results/generate_mid_h100_2026-11-24.log): 64x64
    # tiles at 4 stages ran at ~0.4 us a k tile, 0.65-0.8 of the vendor, where the HBM floor alone
    # ranked them first; at 4096^3 a 3-stage 128x256 tile stays compute-bound, so the latency is
    # under ~2 us.
    LOAD_LATENCY_S = 1.5e-6
    # The k split (KSPLIT), measured on the H100 (eval/timeline_probe.py at 512x4096x4096, 128x256 tiles
    # in pairs, results/timeline_ksplit_h100_2026-12-06.json): the exchange, from the end of the
    # mainloop to the epilogue, took 2.6 us for the 64 KB a CTA receives (the peers' skew included), and a
    # k tile 0.81 us against 0.59 for the same tile with half the SMs idle: 128 CTAs each asking L2 for
    # a 128x256 tile's 48 KB per k tile outrun its feed (eval/feed_probe.cu: 8-10 TB/s for such tiles)
    DSMEM_BPS = 25e9
    KSPLIT_EFF = 0.75

    def prior(self, params: Params, p: Problem, lim: Limits) -> float:
        return self._prior(params, self.frame(params, p), lim)

    def _prior(self, params: Params, p: Problem, lim: Limits) -> float:
        d = self._context(params, p)
        BM, BN, C, STAGES, CL = params["BM"], params["BN"], params["CONSUMERS"], params["STAGES"], params["CLUSTER"]
        intensity = BM * BN / (BM + BN)                       # 64 for 128x128, 85 for 128x256
        # (3 stages already hide the loads of a 128x256 tile: the same measurement)
        eff = (min(1.0, intensity / 85) ** 0.5 * (0.8 if C == 1 else 1.0) * min(1.0, STAGES / 3) ** 0.3
               * (1.02 if CL > 1 else 1.0))
        epi = BM * BN * self.EPI_S_PER_ELEM * (0.2 if params["EPI"] == "tma" else 1.0)
        if params.get("SWAP", 0):
            epi *= 2      # scalar stores, each a quarter-warp's 16 bytes of four rows: half the pairs' rate
        if d["PINGPONG"]:
            # measured on the H100 (results/sm90raw_pingpong_h100_2026-12-06.json, 7 shapes): with the
            # TMA store a consumer's epilogue hides behind the other's mainloop, and 128x128 ping-pong
            # ran at 0.94-0.95 of the cooperative 128x256 tile; the direct stores did not hide (0.71-0.77
            # of the same tile with the TMA store), and 2-CTA clusters lost another 4-5%
            if params["EPI"] == "tma":
                epi *= 0.1
            else:
                eff *= 0.85
            if CL > 1:
                eff *= 0.95 / 1.02
        dram = self.DRAM_TBPS * 1e12 * min(1.0, d["GRID"] / self.DRAM_CTAS)
        ktile_s = 2 * BM * BN * BK / (self.SM_TFLOPS * 1e12 * eff)     # one k tile of one output tile
        # no run beats reading the operands once from HBM, nor its busiest CTA's k tiles in flight
        floor = max(p.min_bytes / dram, d["PER_CTA_KTILES"] * self.LOAD_LATENCY_S / STAGES)
        if d["WS"]:
            # split-K / stream-K: the busiest CTA's k tiles, an fp32 epilogue (twice the bytes) per
            # unit or segment, then the partials' round trip and the reduction's own launch
            if d["SCHED"] == "streamk":
                segments = cdiv(d["PER_CTA_KTILES"], d["KTILES"]) + 1
            else:
                segments = cdiv(d["UNITS"], d["WORKERS"])
            t = d["PER_CTA_KTILES"] * ktile_s + segments * 2 * epi
            t = max(t, floor) + self.LAUNCH_S
            t += (2 * d["WS_BYTES"] + 2 * p.M * p.N) / (self.DRAM_TBPS * 1e12) + self.LAUNCH_S
            return p.flops / t / 1e12
        if d["FIXUP"]:
            # hybrid: the whole items and an equal share of the stream-K wave's k tiles, an epilogue
            # per item, and the fix-up: one fp32 partial tile written by every CTA at once, then the
            # owner reads the other segments' one after another, at its share of L2; plus the
            # launch that clears the flags
            # (the fix-up and the flag-clearing launch come after the streaming, not beside it: a
            # memory-bound shape pays them on top, as 128x4096x14336 did: 0.92 of the vendor against
            # 1.06 for split-K, results/generate_mid_h100_2026-11-24.log)
            fix = BM * BN * 4 * (d["GRID"] + (d["SEGMENTS"] - 1) * lim.sm_count) / (self.L2_TBPS * 1e12)
            t = d["PER_CTA_KTILES"] * ktile_s + (d["DP_ITEMS"] // d["WORKERS"] + 1) * epi
            after = fix + self.LAUNCH_S
        elif d["KSPLIT"] > 1:
            # one tile per cluster: a rank's k slice, the exchange, and its column slice's epilogue
            t = (d["PER_CTA_KTILES"] * ktile_s / self.KSPLIT_EFF + d["XS_BYTES"] / self.DSMEM_BPS
                 + epi / d["KSPLIT"])
            after = 0.0
        else:
            tile_s = 2 * BM * BN * d["KTILES"] * BK / (self.SM_TFLOPS * 1e12 * eff) + epi
            t = cdiv(d["ITEMS"], d["GRID"] // CL) * tile_s
            after = 0.0
        t = max(t, floor) + after + self.LAUNCH_S
        if params["GROUP_M"] == 1 and d["ORDER"] == "grouped" and d["TILES_M"] > 1 and d["TILES"] > d["GRID"]:
            t *= 1.03                                         # no L2 grouping on a multi-wave grid
        if d["ORDER"] == "hilbert":
            # measured beside GROUP_M=8 at 128x256 (results/sm90raw_hilbert_h100_2026-11-24.json):
            # even at 4096^3 and 2048x8192x8192, 1-2.5% slower at 8192^3 and 12288x12288x4096
            t *= 1.01
        return p.flops / t / 1e12


register(Sm90Raw())
