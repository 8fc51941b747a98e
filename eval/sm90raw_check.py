"""GPU check of the sm90raw family (raw-PTX wgmma + TMA + mbarrier): a handful of points, judged by the
real harness (cudal2.harness.evaluate.Evaluator), first verification only at awkward shapes, then
verified and timed at five big shapes. Run on the GPU machine; nothing is asserted.

  python eval/sm90raw_check.py --out r.json                 verify at ODD_SHAPES, then verify + time at SHAPES
  python eval/sm90raw_check.py --out r.json --verify-only   the first phase alone (about a minute)
  python eval/sm90raw_check.py --out r.json --points v1_128x256,tma_128x256_s3 --shapes 0,1
  python eval/sm90raw_check.py --out r.json --thin          split-K / stream-K / small tiles: verify at
                                                            SPLIT_ODD_SHAPES, then verify + time at THIN_SHAPES
  python eval/sm90raw_check.py --out r.json --hybrid        stream-K hybrid (in-kernel fix-up) beside the same
                                                            points with whole tiles: verify at HYBRID_ODD_SHAPES,
                                                            then verify + time at HYBRID_SHAPES
  python eval/sm90raw_check.py --out r.json --mid           small-batch prefill (M = 128, 512): wide tiles, splits
                                                            and stream-K at five LLM layer shapes
  python eval/sm90raw_check.py --out r.json --ksplit        KSPLIT (a cluster computes one wide tile, each CTA a k
                                                            slice, reduce-scattered through distributed shared
                                                            memory) beside whole tiles: verify at KSPLIT_ODD_SHAPES,
                                                            then verify + time at KSPLIT_SHAPES (M = 128-1024)
  python eval/sm90raw_check.py --out r.json --stream        seven M = 128 points at six M = 128 shapes (on a5407f8
                                                            also with L2 eviction priorities, since removed)
  python eval/sm90raw_check.py --out r.json --tall          tall outputs (M >> N): k splits whose tiles cover N, and the
                                                            same tiles over the transposed problem (SWAP=1), beside the
                                                            64x64 entry, at 4096x128x12288 and its transpose
  python eval/sm90raw_check.py --out r.json --hilbert       ORDER=hilbert beside the same points in grouped
                                                            order: verify at HILBERT_ODD_SHAPES, then verify +
                                                            time at HILBERT_SHAPES
  python eval/sm90raw_check.py --out r.json --pingpong      SCHED="pingpong" (each consumer warpgroup owns whole
                                                            tiles, the two in turn) beside the cooperative
                                                            128x256 points: verify at PINGPONG_ODD_SHAPES, then
                                                            verify + time at PINGPONG_SHAPES
  ... --server-gap-us 0   server mode's idle gap before each call (default: the config's 100 us)
  ... --at "M,N,K;M,N,K"  time at these shapes instead of the mode's
  ... --deadline 540    start no new shape after this many seconds (default 540: under ~10 min of GPU)

The points go from the simplest kernel (1 producer + 2 consumer warpgroups, 128x256 tile,
direct-store epilogue, no cluster) to the riskier variants, one feature at a time (odd BN, two m64
tiles per consumer, three consumers, the stmatrix + TMA-store epilogue, 2-CTA clusters with
multicast), so a failure names the feature that broke. The split-K and stream-K points (issue 12's
thin, long-K path: fp32 partials through the workspace, then sm90raw_reduce) go the same way:
small tiles without a split first, then split-K, clusters, odd N, and stream-K last; the judge's
determinism stage checks that the reduction gives the same bits on every call. A point that fails verification (wrong
answer, hang, illegal address) is not evaluated again at later shapes. The family is shape-specific,
so every (point, shape) is its own render and build (builds run in parallel, cached in --cache).

Columns: verified, the stage reached (and the reason when it failed), the speedup against
vendor_default (what the search scores) and vendor_best (cuBLAS / cuBLASLt / autotuned, the
fastest) in offline (CUDA-graph) and server (L2 flushed, one call) modes, TFLOP/s offline,
candidate median time, ptxas registers and spill bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudal2.config import Config  # noqa: E402
from cudal2.harness.evaluate import Candidate, Evaluator  # noqa: E402
from cudal2.kernels.family import Limits  # noqa: E402
from cudal2.kernels.sm90raw import Sm90Raw  # noqa: E402
from cudal2.problem import Problem  # noqa: E402
from cudal2.search.score import score  # noqa: E402

SHAPES = [Problem(4096, 4096, 4096), Problem(8192, 8192, 8192), Problem(2048, 4096, 14336),
          Problem(12288, 12288, 512), Problem(1024, 1024, 1024),
          # thin, long K: the tiles alone leave most of the 132 SMs idle (split-K's shapes)
          Problem(128, 4096, 16384), Problem(64, 1024, 16384), Problem(512, 1024, 8192), Problem(128, 1024, 16384)]
THIN_SHAPES = SHAPES[5:]
# Verification only: M, N and K tails, odd N (scalar stores; EPI=tma is invalid there), odd tile-row
# counts (a 2-CTA cluster's padding tile), a B half wholly past N (2056 = 8 x 256 + 8), M = 1, and a
# single short k tile (K = 8; only 3-stage points are valid there).
ODD_SHAPES = [Problem(257, 135, 1032), Problem(333, 1000, 200), Problem(4095, 2056, 1032), Problem(1, 4096, 1024),
              Problem(200, 136, 8)]
# Verification for split-K / stream-K: M, N and K tails with odd N (scalar C stores in the reduction,
# 65 k tiles over 3 splits), an odd tile-row count under 2-CTA clusters, and M = 1 at long K.
SPLIT_ODD_SHAPES = [Problem(257, 135, 4104), Problem(333, 1000, 4096), Problem(1, 1024, 8192)]
ODD_SHAPES += SPLIT_ODD_SHAPES
# The stream-K hybrid: deep or many-wave shapes of the >= 2^36 band (each a partial last wave of
# 128x256 tiles), and verification with every tail: odd N and a K tail (64-row tiles, a wave + 8
# items), an odd tile-row count under 2-CTA clusters with fewer items than workers (one stream-K
# wave), M and N tails with several items per worker, and 4095 x 2056 (a B half past N).
HYBRID_SHAPES = [Problem(8192, 8192, 8192), Problem(4096, 4096, 4096), Problem(4096, 8192, 16384),
                 Problem(8192, 8192, 12288), Problem(2048, 8192, 8192)]
HYBRID_ODD_SHAPES = [Problem(1025, 1001, 4104), Problem(600, 1000, 4096), Problem(2000, 3000, 1000),
                     Problem(4095, 2056, 1032)]
# Hilbert order against GROUP_M strips: big outputs of many waves (where the items in flight decide
# what the L2 holds), and verification on wide, tall and odd item grids, with split-K (item_index).
HILBERT_SHAPES = [Problem(4096, 4096, 4096), Problem(8192, 8192, 8192), Problem(12288, 12288, 4096),
                  Problem(2048, 8192, 8192)]
HILBERT_ODD_SHAPES = [Problem(6000, 700, 2048), Problem(1025, 1001, 4104), Problem(4095, 2056, 1032),
                      Problem(257, 135, 4104)]
# The LLM list's prefill of a small batch (M = 128, 512): B streams from HBM once while A is re-read
# by every tile column, so the tile width and the split decide the traffic. Verification: the split
# points at the split tails, then timing at three M = 128 and two M = 512 layer shapes.
MID_SHAPES = [Problem(128, 4096, 14336), Problem(128, 14336, 4096), Problem(128, 28672, 8192),
              Problem(512, 14336, 4096), Problem(512, 4096, 14336)]

# The M = 128 shapes where cuBLAS reads B below the load path's ceiling (eval/bstream_probe.cu,
# results/bstream_probe_h100_2026-11-25.json): long K (A of 3.7-7.3 MB, pushed out of L2 by the
# stream of B unless B's lines go first) and very wide N.
STREAM_SHAPES = [Problem(128, 8192, 28672), Problem(128, 5120, 27648), Problem(128, 3584, 18944),
                 Problem(128, 4096, 14336), Problem(128, 28672, 8192), Problem(128, 128256, 4096)]

BASE = dict(BM=128, BN=256, CONSUMERS=2, STAGES=4, GROUP_M=8, EPI="direct", CLUSTER=1, MAX_CTAS=132,
            SPLIT_K=1, SCHED="tiles", ORDER="grouped")
SMALL = dict(BM=64, CONSUMERS=1)
POINTS = {
    # the first version: 1 producer + 2 consumers x 64 rows, no cluster, stores from registers
    "v1_128x256": {},
    "v1_128x192": dict(BN=192),
    "v1_128x128_s5": dict(BN=128, STAGES=5),
    # odd BN against wave quantization (4096/208 -> 20 tile columns)
    "odd_128x208": dict(BN=208),
    # two m64 wgmmas per consumer (128 rows each)
    "2m_256x128": dict(BM=256, BN=128),
    # three consumer warpgroups (512 threads, setmaxnreg 24/160)
    "3c_192x160": dict(BM=192, CONSUMERS=3, BN=160),
    # stmatrix + TMA-store epilogue overlapped with the next tile
    "tma_128x256_s3": dict(EPI="tma", STAGES=3),
    # 2-CTA clusters, B multicast
    "c2_128x256": dict(CLUSTER=2),
    "c2_tma_128x256_s3": dict(CLUSTER=2, EPI="tma", STAGES=3),
    "c2_tma_128x256_s3_g128": dict(CLUSTER=2, EPI="tma", STAGES=3, MAX_CTAS=128),
    # ---- the thin, long-K path (issue 12) ----
    # small tiles (one consumer warpgroup, wgmma m64) without a split: the reference for split-K
    "small_64x128": dict(SMALL, BN=128),
    # split-K, deterministic separate reduction (sm90raw_reduce)
    "sk8_64x128": dict(SMALL, BN=128, SPLIT_K=8),
    "sk4_64x64_s8": dict(SMALL, BN=64, SPLIT_K=4, STAGES=8),
    "sk2_64x128_s6": dict(SMALL, BN=128, SPLIT_K=2, STAGES=6),
    "sk3_64x80": dict(SMALL, BN=80, SPLIT_K=3),
    "sk4_128x128": dict(BN=128, SPLIT_K=4),
    "sk2_128x128_c2": dict(BN=128, SPLIT_K=2, CLUSTER=2),
    # stream-K: equal runs of all k-tile iterations per CTA, fixed up by sm90raw_reduce
    "streamk_64x96": dict(SMALL, BN=96, SCHED="streamk"),
    "streamk_128x112_c2": dict(BN=112, SCHED="streamk", CLUSTER=2),
    # ---- the stream-K hybrid: whole tiles for the full waves, one stream-K wave fixed up in the kernel ----
    "hy_tma_128x256_s3": dict(EPI="tma", STAGES=3, SCHED="hybrid"),
    "hy_c2_tma_128x256_s3": dict(CLUSTER=2, EPI="tma", STAGES=3, SCHED="hybrid"),
    "hy_128x256": dict(SCHED="hybrid"),
    "hy_c2_128x112": dict(BN=112, CLUSTER=2, SCHED="hybrid"),
    "hy_64x64": dict(SMALL, BN=64, SCHED="hybrid"),
    # ---- Hilbert order ----
    "hb_tma_128x256_s3": dict(EPI="tma", STAGES=3, ORDER="hilbert"),
    "hb_c2_tma_128x256_s3": dict(CLUSTER=2, EPI="tma", STAGES=3, ORDER="hilbert"),
    "hb_hy_tma_128x256_s3": dict(EPI="tma", STAGES=3, SCHED="hybrid", ORDER="hilbert"),
    "hb_sk3_64x80": dict(SMALL, BN=80, SPLIT_K=3, ORDER="hilbert"),
    "hb_128x112": dict(BN=112, ORDER="hilbert"),
    # ---- small-batch prefill (M = 128, 512): wide tiles re-read A less; splits fill the SMs ----
    "128x128_s6": dict(BN=128, STAGES=6),
    "tma_128x128_s5": dict(BN=128, STAGES=5, EPI="tma"),
    "sk2_128x256": dict(SPLIT_K=2),
    "sk4_128x256": dict(SPLIT_K=4),
    "sk8_128x256": dict(SPLIT_K=8),
    "sk2_128x128_s6": dict(BN=128, SPLIT_K=2, STAGES=6),
    "streamk_128x256": dict(SCHED="streamk"),
    "streamk_128x128_s6": dict(BN=128, SCHED="streamk", STAGES=6),
    "hy_tma_128x128_s5": dict(BN=128, EPI="tma", STAGES=5, SCHED="hybrid"),
    # A re-read less: 64-row tiles in 2-CTA clusters share B, so a tile column costs half the A
    # traffic of a 128-row tile of the same width; odd widths fill the 132 SMs in one wave
    "c2_64x256_s5": dict(SMALL, BN=256, CLUSTER=2, STAGES=5),
    "c2_tma_64x256_s4": dict(SMALL, BN=256, CLUSTER=2, STAGES=4, EPI="tma"),
    "c2_tma_64x224_s5": dict(SMALL, BN=224, CLUSTER=2, STAGES=5, EPI="tma"),
    "c2_tma_64x128_s8": dict(SMALL, BN=128, CLUSTER=2, STAGES=8, EPI="tma"),
    "sk2_c2_64x128_s6": dict(SMALL, BN=128, CLUSTER=2, SPLIT_K=2, STAGES=6),
    "tma_128x112_s6": dict(BN=112, STAGES=6, EPI="tma"),
    "tma_128x96_s7": dict(BN=96, STAGES=7, EPI="tma"),
}
# ---- ping-pong consumers: whole tiles per consumer warpgroup, taken in turn (the epilogue of one beside
# the mainloop of the other), against the cooperative 128x256 points ----
PP = dict(SCHED="pingpong", BN=128)
POINTS.update({
    "pp_tma_128x128_s5": dict(PP, EPI="tma", STAGES=5),
    "pp_c2_tma_128x128_s5": dict(PP, EPI="tma", STAGES=5, CLUSTER=2),
    "pp_128x128_s6": dict(PP, STAGES=6),
    "pp_128x192_s5": dict(PP, BN=192, STAGES=5),
    "pp_c2_128x192_s5": dict(PP, BN=192, STAGES=5, CLUSTER=2),
    "pp_tma_64x256_s4": dict(PP, BM=64, BN=256, EPI="tma", STAGES=4),
})
PINGPONG_POINTS = ["tma_128x256_s3", "c2_tma_128x256_s3", "pp_tma_128x128_s5", "pp_c2_tma_128x128_s5",
                   "pp_128x128_s6", "pp_128x192_s5", "pp_c2_128x192_s5", "pp_tma_64x256_s4"]
# the band's square shapes, a deep-K layer, and mid-band dev shapes of a few waves (where an exposed
# epilogue is a larger share of a CTA's time)
PINGPONG_SHAPES = [Problem(4096, 4096, 4096), Problem(8192, 8192, 8192), Problem(2048, 4096, 14336),
                   Problem(2048, 2048, 2048), Problem(1024, 2048, 4096), Problem(512, 16384, 4096),
                   Problem(8192, 4096, 4096)]
# verification: M, N and K tails (N % 8 == 0 for the TMA store, and odd N for the direct one), an odd
# tile-row count under 2-CTA clusters, an odd number of items per CTA (one consumer gets one more),
# M = 1, a short K (9 k tiles), and an M edge with an odd tile-row count where N divides the
# tile (where the TMA-store points are valid)
PINGPONG_ODD_SHAPES = [Problem(257, 136, 1032), Problem(4095, 2056, 1032), Problem(1025, 1001, 4104),
                       Problem(1, 4096, 1024), Problem(600, 1000, 520), Problem(2000, 3000, 1000),
                       Problem(1900, 2048, 1000)]

# ---- M = 128, where B streams from HBM once (STREAM_SHAPES): whole tiles, the hybrid, split-K, stream-K ----
STREAM_POINTS = ["tma_128x112_s6", "hy_tma_128x256_s3", "hy_tma_128x128_s5", "sk4_128x256", "sk2_64x128_s6",
                 "streamk_128x128_s6", "sk2_128x128_s6"]
THIN_POINTS = ["tma_128x256_s3", "small_64x128", "sk8_64x128", "sk4_64x64_s8", "sk2_64x128_s6", "sk3_64x80",
               "sk4_128x128", "sk2_128x128_c2", "streamk_64x96", "streamk_128x112_c2"]
HYBRID_POINTS = ["tma_128x256_s3", "hy_tma_128x256_s3", "c2_tma_128x256_s3", "hy_c2_tma_128x256_s3", "hy_128x256",
                 "hy_c2_128x112", "hy_64x64"]
HILBERT_POINTS = ["tma_128x256_s3", "hb_tma_128x256_s3", "c2_tma_128x256_s3", "hb_c2_tma_128x256_s3",
                  "hy_tma_128x256_s3", "hb_hy_tma_128x256_s3", "hb_sk3_64x80", "hb_128x112"]
MID_POINTS = ["tma_128x256_s3", "c2_tma_128x256_s3", "hy_tma_128x256_s3", "128x128_s6", "tma_128x128_s5",
              "hy_tma_128x128_s5", "sk2_128x256", "sk4_128x256", "sk8_128x256", "sk2_128x128_s6", "sk4_128x128",
              "sk2_64x128_s6", "streamk_128x256", "streamk_128x128_s6", "c2_64x256_s5", "c2_tma_64x256_s4",
              "c2_tma_64x224_s5", "c2_tma_64x128_s8", "sk2_c2_64x128_s6", "tma_128x112_s6", "tma_128x96_s7"]
# ---- the k split inside a cluster (KSPLIT): where a shape has too few wide tiles to fill the SMs, a
# cluster of KSPLIT CTAs computes each 128-wide tile, one k slice a CTA; against whole 128x128 and
# 128x256 tiles (the M = 512 timeline, results/timeline_m512_h100_2026-12-06.json: a 128x256 k tile ran
# at 0.59 us where 128x128 took 0.35, i.e. 1.7x the rate per FLOP, but only 64 of 132 SMs had one) ----
POINTS.update({
    "ks2_tma_128x256_s3": dict(EPI="tma", STAGES=3, KSPLIT=2),
    "ks2_128x256_s4": dict(STAGES=4, KSPLIT=2),
    "ks4_tma_128x256_s3": dict(EPI="tma", STAGES=3, KSPLIT=4),
    "ks2_tma_128x128_s5": dict(BN=128, EPI="tma", STAGES=5, KSPLIT=2),
    "ks4_tma_128x128_s5": dict(BN=128, EPI="tma", STAGES=5, KSPLIT=4),
})
# the best whole-tile point of the M = 512 searches (results/generate_llm512_h100_2026-11-24.log)
POINTS["c2_tma_128x128_s5"] = dict(BN=128, EPI="tma", STAGES=5, CLUSTER=2)
# small tiles split in the cluster: the thin, long-K shapes' split-K without its workspace round trip
# and second launch
POINTS.update({
    "ks4_tma_64x64_s8": dict(SMALL, BN=64, EPI="tma", STAGES=8, KSPLIT=4),
    "ks2_tma_64x64_s8": dict(SMALL, BN=64, EPI="tma", STAGES=8, KSPLIT=2),
    "ks2_tma_64x128_s6": dict(SMALL, BN=128, EPI="tma", STAGES=6, KSPLIT=2),
    "ks4_tma_64x128_s6": dict(SMALL, BN=128, EPI="tma", STAGES=6, KSPLIT=4),
    # in clusters of 8 (the portable limit): 16 thin tiles on 128 SMs
    "ks8_64x64_s8": dict(SMALL, BN=64, STAGES=8, KSPLIT=8),
    "ks8_64x64_s6": dict(SMALL, BN=64, STAGES=6, KSPLIT=8),
    "ks8_tma_64x128_s6": dict(SMALL, BN=128, EPI="tma", STAGES=6, KSPLIT=8),
    "ks8_64x128_s6": dict(SMALL, BN=128, STAGES=6, KSPLIT=8),
    "ks8_64x64_s4": dict(SMALL, BN=64, STAGES=4, KSPLIT=8),
    "ks8_64x64_s5": dict(SMALL, BN=64, STAGES=5, KSPLIT=8),
    "ks8_64x64_s7": dict(SMALL, BN=64, STAGES=7, KSPLIT=8),
    "ks8_64x128_s3": dict(SMALL, BN=128, STAGES=3, KSPLIT=8),
    "ks8_tma_64x128_s3": dict(SMALL, BN=128, EPI="tma", STAGES=3, KSPLIT=8),
})
KSPLIT_POINTS = ["tma_128x128_s5", "tma_128x256_s3", "ks2_tma_128x256_s3", "ks2_128x256_s4", "ks4_tma_128x256_s3",
                 "ks2_tma_128x128_s5", "ks4_tma_128x128_s5", "sk4_64x64_s8", "sk2_64x128_s6", "ks4_tma_64x64_s8",
                 "ks2_tma_64x64_s8", "ks2_tma_64x128_s6", "ks4_tma_64x128_s6", "ks8_64x64_s8", "ks8_64x64_s6",
                 "ks8_tma_64x128_s6", "ks8_64x128_s6"]
# M = 512 and 128 layer shapes of the LLM list whose 128x256 tiles number at most 66, and two dev mid-band
# shapes; verification: M, N and K tails, odd N (direct stores), a K whose k tiles do not divide by the split
KSPLIT_SHAPES = [Problem(512, 4096, 4096), Problem(512, 3584, 3584), Problem(512, 1024, 4096),
                 Problem(512, 4096, 14336), Problem(512, 3584, 18944), Problem(512, 1024, 8192),
                 Problem(128, 4096, 4096), Problem(128, 3584, 3584), Problem(128, 5120, 5120),
                 Problem(128, 4096, 14336), Problem(128, 8192, 8192), Problem(1024, 1024, 12288),
                 Problem(2048, 512, 12288),
                 # thin, long K (split-K's shapes; the last three in the dev set's mid band)
                 Problem(128, 1024, 16384), Problem(512, 1024, 8192), Problem(64, 1024, 16384),
                 Problem(128, 512, 16384), Problem(4096, 128, 12288),
                 # the LLM list's thin M = 128 layers (clusters of 8 over 16 tiles of 64x64 or 64x128)
                 Problem(128, 1024, 4096), Problem(128, 1024, 5120), Problem(128, 512, 3584),
                 Problem(128, 1024, 8192)]
KSPLIT_ODD_SHAPES = [Problem(257, 1001, 1032), Problem(300, 2000, 1000), Problem(1, 1024, 4104),
                     Problem(100, 500, 16392)]
# ---- tall outputs (M >> N, A streamed from HBM): the dev mid band's 4096x128x12288, whose 64x64 entry
# re-reads both operands through L2 (128 CTAs x 3 MB), against k splits whose tiles cover N whole and
# read A once, with deeper rings (Little's law at HBM rate); and the transposed problem 128x4096x12288,
# where 128x64 tiles in pairs (KSPLIT 2, 8 stages) serve at 128x4096x14336, as the reference (128x128
# tiles in fours would make 32 clusters of 4, more than the 30 resident at once) ----
POINTS.update({
    "small_64x64_s8_g1": dict(SMALL, BN=64, STAGES=8, GROUP_M=1),      # the 4096x128x12288 entry
    "ks2_64x128_s8": dict(SMALL, BN=128, STAGES=8, KSPLIT=2),
    "ks2_64x128_s6": dict(SMALL, BN=128, STAGES=6, KSPLIT=2),
    "ks2_tma_64x128_s8": dict(SMALL, BN=128, STAGES=8, KSPLIT=2, EPI="tma"),
    "ks2_128x64_s8": dict(BN=64, STAGES=8, KSPLIT=2),
    "ks4_tma_192x128_s4": dict(BM=192, CONSUMERS=3, BN=128, STAGES=4, KSPLIT=4, EPI="tma"),
    # SWAP=1: the same tiles over the transposed problem (C^T = B . A^T, stored transposed), so the
    # 128-row side spans N and two consumers each multiply 64 of its rows
    "sw_ks2_128x64_s8": dict(BN=64, STAGES=8, KSPLIT=2, SWAP=1),
    "sw_ks2_128x64_s6": dict(BN=64, STAGES=6, KSPLIT=2, SWAP=1),
    "sw_ks2_128x80_s8": dict(BN=80, STAGES=8, KSPLIT=2, SWAP=1),
    "sw_128x64_s8": dict(BN=64, STAGES=8, SWAP=1),
    "sw_pp_128x64_s8": dict(BN=64, STAGES=8, SCHED="pingpong", SWAP=1),
})
TALL_POINTS = ["small_64x64_s8_g1", "ks2_64x128_s8", "ks2_64x128_s6", "ks2_tma_64x128_s8", "ks2_128x64_s8",
               "ks4_tma_192x128_s4", "sw_ks2_128x64_s8", "sw_ks2_128x64_s6", "sw_ks2_128x80_s8", "sw_128x64_s8",
               "sw_pp_128x64_s8"]
TALL_SHAPES = [Problem(4096, 128, 12288), Problem(128, 4096, 12288)]
# verification: tall outputs with M, N and K tails (odd N: C's rows of odd length under the transposed
# stores), N = 1, and a long K whose k tiles do not divide by the split
TALL_ODD_SHAPES = [Problem(1001, 257, 1032), Problem(2000, 300, 1000), Problem(1024, 1, 4104),
                   Problem(500, 100, 16392)]
# points only verified (at the odd shapes), not timed: they cover tails, not speed
VERIFY_ONLY = {"hy_128x256", "hy_c2_128x112", "hy_64x64", "hb_sk3_64x80", "hb_128x112"}


def _fmt(v, fmt: str) -> str:
    return (fmt % v) if isinstance(v, (int, float)) else "-"


def row_of(name: str, params: dict, p: Problem, r) -> dict:
    res = next(iter(r.build.get("resources", {}).values()), {})
    cand = r.times.get("offline", {}).get("candidate")
    return {"shape": str(p), "point": name, "params": params, "verified": r.ok,
            "stage": getattr(r.stage, "value", str(r.stage)), "fault": getattr(r.fault, "value", None),
            "reason": r.reason, "score": score(r),
            "speedup": r.speedup, "tflops": r.tflops, "cand_offline_us": getattr(cand, "median_us", None),
            "registers": res.get("registers"), "spill_bytes": res.get("spill_stores"),
            "gpu": r.gpu.get("name") if isinstance(r.gpu, dict) else None, "elapsed_s": round(r.elapsed_s, 1)}


def print_row(w: dict) -> None:
    sp = w["speedup"]
    print(f"{w['shape']:18s} {w['point']:24s} {'ok ' if w['verified'] else 'BAD'} {w['stage']:10s} "
          f"default off x{_fmt(sp.get('offline', {}).get('vendor_default'), '%.3f')} "
          f"srv x{_fmt(sp.get('server', {}).get('vendor_default'), '%.3f')} | "
          f"best off x{_fmt(sp.get('offline', {}).get('vendor_best'), '%.3f')} "
          f"srv x{_fmt(sp.get('server', {}).get('vendor_best'), '%.3f')} | "
          f"{_fmt(w['tflops'].get('offline'), '%.0f')} TFLOP/s {_fmt(w['cand_offline_us'], '%.1f')} us | "
          f"regs {w['registers']} spill {w['spill_bytes']} B | {w['elapsed_s']} s "
          f"{'' if w['verified'] else (w['fault'] or '') + ' ' + w['reason'][:200]}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True, help="JSON rows are written here (after every shape)")
    ap.add_argument("--cache", default="", help="build cache folder (default: a fresh temporary one)")
    ap.add_argument("--points", default="", help="comma list of point names (default: all)")
    ap.add_argument("--shapes", default="", help="comma list of indices into SHAPES (default: all)")
    ap.add_argument("--verify-only", action="store_true", help="only the verification phase at ODD_SHAPES")
    ap.add_argument("--skip-odd", action="store_true", help="skip the verification phase at ODD_SHAPES")
    ap.add_argument("--deadline", type=float, default=540.0, help="start no new shape after this many seconds")
    ap.add_argument("--server-gap-us", type=float, default=None,
                    help="server mode's mean idle gap before each call (default: the config's)")
    ap.add_argument("--thin", action="store_true",
                    help="the split-K / stream-K / small-tile points (THIN_POINTS) at SPLIT_ODD_SHAPES and THIN_SHAPES; "
                         "--points and --shapes (indices into THIN_SHAPES) narrow it further")
    ap.add_argument("--hybrid", action="store_true",
                    help="the stream-K hybrid (HYBRID_POINTS) at HYBRID_ODD_SHAPES and HYBRID_SHAPES; "
                         "--points and --shapes (indices into HYBRID_SHAPES) narrow it further")
    ap.add_argument("--hilbert", action="store_true",
                    help="ORDER=hilbert beside grouped order (HILBERT_POINTS) at HILBERT_ODD_SHAPES and "
                         "HILBERT_SHAPES; --points and --shapes (indices into HILBERT_SHAPES) narrow it further")
    ap.add_argument("--mid", action="store_true",
                    help="small-batch prefill (MID_POINTS) at SPLIT_ODD_SHAPES and MID_SHAPES (M = 128, 512); "
                         "--points and --shapes (indices into MID_SHAPES) narrow it further")
    ap.add_argument("--pingpong", action="store_true",
                    help="ping-pong consumers (PINGPONG_POINTS) at PINGPONG_ODD_SHAPES and PINGPONG_SHAPES; "
                         "--points and --shapes (indices into PINGPONG_SHAPES) narrow it further")
    ap.add_argument("--ksplit", action="store_true",
                    help="the k split in a cluster (KSPLIT_POINTS) at KSPLIT_ODD_SHAPES and KSPLIT_SHAPES; "
                         "--points and --shapes (indices into KSPLIT_SHAPES) narrow it further")
    ap.add_argument("--tall", action="store_true",
                    help="tall outputs (TALL_POINTS, the swapped points among them) at TALL_ODD_SHAPES and TALL_SHAPES")
    ap.add_argument("--at", default="",
                    help="time at these shapes instead of the mode's (M,N,K;M,N,K...)")
    ap.add_argument("--stream", action="store_true",
                    help="the M = 128 points (STREAM_POINTS) at SPLIT_ODD_SHAPES and STREAM_SHAPES; "
                         "--points and --shapes (indices into STREAM_SHAPES) narrow it further")
    args = ap.parse_args()

    fam, lim = Sm90Raw(), Limits()
    default, pool, odd = ((THIN_POINTS, THIN_SHAPES, SPLIT_ODD_SHAPES) if args.thin else
                          (MID_POINTS, MID_SHAPES, SPLIT_ODD_SHAPES) if args.mid else
                          (STREAM_POINTS, STREAM_SHAPES, SPLIT_ODD_SHAPES) if args.stream else
                          (TALL_POINTS, TALL_SHAPES, TALL_ODD_SHAPES) if args.tall else
                          (KSPLIT_POINTS, KSPLIT_SHAPES, KSPLIT_ODD_SHAPES) if args.ksplit else
                          (PINGPONG_POINTS, PINGPONG_SHAPES, PINGPONG_ODD_SHAPES) if args.pingpong else
                          (HYBRID_POINTS, HYBRID_SHAPES, HYBRID_ODD_SHAPES) if args.hybrid else
                          (HILBERT_POINTS, HILBERT_SHAPES, HILBERT_ODD_SHAPES) if args.hilbert else
                          (list(POINTS), SHAPES, ODD_SHAPES))
    names = args.points.split(",") if args.points else default
    points = {k: {**BASE, **POINTS[k]} for k in names}
    shapes = [pool[int(i)] for i in args.shapes.split(",")] if args.shapes else pool
    if args.at:
        shapes = [Problem(*map(int, x.split(","))) for x in args.at.split(";")]
    timing = {} if args.server_gap_us is None else {"server_gap_us": args.server_gap_us}
    cfg = Config.load(build={"cache_dir": args.cache or tempfile.mkdtemp(prefix="sm90raw-")}, timing=timing)
    ev = Evaluator(cfg)
    rows: list[dict] = []
    broken: set[str] = set()       # points that failed verification somewhere: not tried again
    t0 = time.monotonic()
    phases = ([] if args.skip_odd else [("verify", p) for p in odd]) + \
             ([] if args.verify_only else [("time", p) for p in shapes])
    try:
        for phase, p in phases:
            if time.monotonic() - t0 > args.deadline:
                print(f"[{p}: skipped, past the {args.deadline:.0f} s deadline]", flush=True)
                continue
            todo = []
            for name, x in points.items():
                why = fam.invalid(x, p, lim)
                if why:
                    print(f"{str(p):18s} {name:24s} --- invalid here: {why}")
                elif name not in broken and not (phase == "time" and name in VERIFY_ONLY):
                    todo.append((name, x))
            t1 = time.monotonic()
            cands = [Candidate.made_by(f"sm90raw-{n}", fam.render(x, p), "template", "sm90raw", x) for n, x in todo]
            results = ev.evaluate(cands, p, reuse=False, time_it=phase == "time")
            for (name, x), r in zip(todo, results):
                w = row_of(name, x, p, r)
                w["phase"] = phase
                rows.append(w)
                print_row(w)
                if not r.ok:
                    broken.add(name)
            print(f"[{p} ({phase}): {len(todo)} candidates in {time.monotonic() - t1:.0f} s; "
                  f"{time.monotonic() - t0:.0f} s so far]", flush=True)
            args.out.write_text(json.dumps(rows, indent=1))
    finally:
        ev.close()
        args.out.write_text(json.dumps(rows, indent=1))

    print(f"\n{sum(w['verified'] for w in rows)}/{len(rows)} verified; broken points: {sorted(broken) or 'none'}")
    for p in shapes:
        ok = [w for w in rows if w["shape"] == str(p) and w["verified"] and w["phase"] == "time"]
        if ok:
            best = max(ok, key=lambda w: w["score"] or 0)
            print(f"best at {p}: {best['point']} score x{best['score']:.3f} (vs vendor_default), "
                  f"{_fmt(best['tflops'].get('offline'), '%.0f')} TFLOP/s offline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
