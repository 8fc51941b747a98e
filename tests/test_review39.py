"""Review 39: candidate input that stopped the reward service or stalled it (see each test)."""

import pytest

from cudal2.harness.build import BuildResult
from cudal2.harness.launch import parse
from cudal2.problem import Problem, ProblemError, ShapeClaim, parse_claim
from cudal2.result import Stage

from .conftest import KERNELS

BAD = KERNELS / "bad"
P = Problem(257, 136, 1032)


def test_a_claim_whose_m_range_starts_at_zero_is_unreadable():
    with pytest.raises(ProblemError):
        parse_claim((BAD / "zz39_mrange_zero_low_end.cu").read_text())


def _finish(cfg, src):
    from cudal2.harness.evaluate import Candidate, Evaluator

    class NoWorker:
        def run(self, *a, **k):
            raise AssertionError("judged a candidate whose claim cannot be verified")

        def close(self):
            pass

    spec = parse(src).to_dict()
    b = BuildResult(True, "k", "build", lib_path="/nonexistent/kernel.cubin", kind="cubin", spec=spec)
    return Evaluator(cfg, worker=NoWorker())._finish(Candidate("c", src), P, b, False, True)


def test_the_zero_low_end_claim_fails_at_load_in_the_evaluator(cfg):
    r = _finish(cfg, (BAD / "zz39_mrange_zero_low_end.cu").read_text())
    assert not r.ok and r.stage == Stage.LOAD and "harness_traceback" not in r.checks


def test_any_problem_error_of_the_claims_verification_shapes_is_a_load_failure(cfg, monkeypatch):
    # whatever else a claim can name that is no Problem fails the candidate, never the evaluator
    def bad_shapes(self, p, tiles=(128,), rng=None):
        raise ProblemError("M must be a positive integer, got 0")
    monkeypatch.setattr(ShapeClaim, "verification_shapes", bad_shapes)
    src = (KERNELS / "good" / "naive_v2.cu").read_text()
    r = _finish(cfg, src)
    assert not r.ok and r.stage == Stage.LOAD and "positive integer" in r.reason
