"""The sm90raw family through the judge on the GPU: one point per scheduler (whole tiles with the
TMA-store epilogue, split-K with its separate reduction, stream-K, the hybrid with its in-kernel
fix-up, with and without a 2-CTA cluster, ping-pong consumers, several items per consumer so that
the ring is handed over many times, the k split reduce-scattered in a cluster, and the swapped
operands' transposed stores) verified at shapes with M, N and K tails, the judge's
determinism stage included. Correctness only: speed is eval/sm90raw_check.py's."""

import pytest

from cudal2.config import Config
from cudal2.harness.evaluate import Candidate, Evaluator
from cudal2.kernels.family import Limits
from cudal2.kernels.sm90raw import Sm90Raw
from cudal2.problem import Problem

pytestmark = pytest.mark.gpu

FAM = Sm90Raw()
BASE = dict(BM=128, BN=256, CONSUMERS=2, STAGES=3, GROUP_M=8, EPI="direct", CLUSTER=1, MAX_CTAS=132,
            SPLIT_K=1, SCHED="tiles")
P = Problem(2000, 3000, 1000)      # M, N and K tails; 128x256 tiles: 192 items, a wave and a half
THIN = Problem(257, 135, 4104)     # odd N (scalar stores in the reduction), a K tail over the splits
# ping-pong: 2.7-3.9 items per CTA; an M edge with an odd tile-row count (the cluster's padding tile) where
# N divides the tile (the TMA store), and M, N, K tails for the direct stores
PP_TMA, PP_DIRECT = Problem(1900, 4096, 1000), Problem(4095, 2056, 1032)
# the k split in a cluster: one tile per cluster, M, N and K tails (17 k tiles over 4 ranks), odd N
KS_TMA, KS_DIRECT = Problem(300, 2000, 1000), Problem(257, 1001, 1032)
# in clusters of 8 (64x64 tiles, 16 of them): M and N tails, N % 8 != 0, 257 k tiles over 8 ranks
KS8 = Problem(100, 500, 16392)
# swapped operands (C^T = B . A^T, stored transposed): a tall output with M, N and K tails, odd N (C's
# rows of odd length), the k split's column slices landing in C's rows
SWAP = Problem(1001, 257, 1032)
CASES = [
    ("tiles_tma", dict(EPI="tma"), P),
    ("streamk_128x112_c2", dict(BN=112, CLUSTER=2, STAGES=4, SCHED="streamk"), P),
    ("hybrid_tma", dict(EPI="tma", SCHED="hybrid"), P),
    ("hybrid_c2", dict(CLUSTER=2, SCHED="hybrid"), P),
    ("splitk3_64x80", dict(BM=64, BN=80, CONSUMERS=1, STAGES=4, SPLIT_K=3), THIN),
    ("pingpong_tma_c2", dict(BN=128, STAGES=5, EPI="tma", CLUSTER=2, SCHED="pingpong"), PP_TMA),
    ("pingpong_direct", dict(BN=192, STAGES=5, SCHED="pingpong"), PP_DIRECT),
    ("ksplit2_tma", dict(EPI="tma", KSPLIT=2), KS_TMA),
    ("ksplit4_direct", dict(KSPLIT=4, STAGES=4), KS_DIRECT),
    ("ksplit8_64x64", dict(BM=64, BN=64, CONSUMERS=1, STAGES=6, KSPLIT=8), KS8),
    ("swap_ksplit2_128x64", dict(BN=64, STAGES=8, KSPLIT=2, SWAP=1), SWAP),
    ("swap_pingpong_128x64", dict(BN=64, STAGES=6, SCHED="pingpong", SWAP=1), SWAP),
]


def test_one_point_per_scheduler_verifies_with_tails(tmp_path):
    ev = Evaluator(Config.load(build={"cache_dir": str(tmp_path / "cache")}))
    bad = {}
    try:
        for p in dict.fromkeys(q for _, _, q in CASES):
            todo = [(n, {**BASE, **kw}) for n, kw, q in CASES if q == p]
            for n, x in todo:
                assert FAM.invalid(x, p, Limits()) is None, (n, FAM.invalid(x, p, Limits()))
            cands = [Candidate.made_by(f"sm90raw-{n}", FAM.render(x, p), "template", "sm90raw", x) for n, x in todo]
            for (n, _), r in zip(todo, ev.evaluate(cands, p, reuse=False, time_it=False)):
                if not r.ok:
                    bad[n] = (str(r.stage), r.reason[:200])
    finally:
        ev.close()
    assert not bad, bad
