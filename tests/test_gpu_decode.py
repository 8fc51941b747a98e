"""The decode families through the judge on the GPU: stream (bulk copies, one point with the fix-up
of row blocks cut between CTAs, one with whole row blocks, one with A copied per stage) and skinny
(split-K with its reduction) verified at shapes with M, N and K tails, the judge's determinism stage
included. Correctness only: speed is eval/skinny_check.py's."""

import pytest

from cudal2.config import Config
from cudal2.harness.evaluate import Candidate, Evaluator
from cudal2.kernels.family import Limits, get_family
from cudal2.problem import Problem

pytestmark = pytest.mark.gpu

STREAM = dict(ROWS=8, KC=1024, STAGES=4, WARPS=4, A_RES=1, SPLIT_ROWS=1, GRID=132, KSPLIT=1)
CASES = [
    ("stream", "fixup", dict(STREAM), Problem(1, 4097, 4104)),
    ("stream", "rows_m9", dict(STREAM, ROWS=16, KC=512, STAGES=2, SPLIT_ROWS=0, GRID=264), Problem(9, 14335, 4112)),
    ("stream", "a_stage_m13", dict(STREAM, ROWS=32, KC=512, STAGES=2, A_RES=0), Problem(13, 8200, 2072)),
    # k split over clusters: partial tiles pushed to rank 0 (st.async), slices past K, N and M tails
    ("stream", "ksplit4_m13", dict(STREAM, ROWS=16, KC=1024, STAGES=3, A_RES=0, SPLIT_ROWS=0, KSPLIT=4),
     Problem(13, 1001, 4104)),
    ("stream", "ksplit2_m16", dict(STREAM, ROWS=32, KC=2048, STAGES=2, WARPS=8, A_RES=0, SPLIT_ROWS=0, KSPLIT=2),
     Problem(16, 1000, 8200)),
    ("skinny", "split4", dict(WARP_N=8, WARPS=4, SPLIT_K=4, UNROLL=2, A_SMEM=1), Problem(5, 1001, 1000)),
]


@pytest.mark.parametrize("family,name,params,p", CASES, ids=[f"{f}-{n}" for f, n, _, _ in CASES])
def test_a_decode_point_verifies_with_tails(tmp_path, family, name, params, p):
    fam = get_family(family)
    assert fam.invalid(params, p, Limits()) is None, fam.invalid(params, p, Limits())
    ev = Evaluator(Config.load(build={"cache_dir": str(tmp_path / "cache")}))
    try:
        [r] = ev.evaluate([Candidate.made_by(f"{family}-{name}", fam.render(params, p), "template", family, params)],
                          p, reuse=False, time_it=False)
    finally:
        ev.close()
    assert r.ok, (str(r.stage), r.reason[:200])
