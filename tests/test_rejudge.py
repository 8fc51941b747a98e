"""Implausible wins are judged again before they count (the decision and the merge; the GPU run is
in test_gpu_judge.py)."""

import pytest

from cudal2.harness import evaluate as ev_mod
from cudal2.harness.artifact import JudgeRequest
from cudal2.harness.evaluate import Evaluator
from cudal2.harness.store import Store
from cudal2.harness.worker import Outcome
from cudal2.problem import Problem
from cudal2.result import EvalResult, Stage

P = Problem(256, 256, 256)


def verdict(speedup: float, ok: bool = True, source_hash: str = "cand") -> EvalResult:
    r = EvalResult(name="k", source_hash=source_hash, M=P.M, N=P.N, K=P.K, stage=Stage.DONE if ok else Stage.TIMING, ok=ok)
    r.speedup = {"offline": {"vendor_default": speedup}, "server": {"vendor_default": speedup}}
    return r


@pytest.fixture
def evaluator(cfg, tmp_path):
    e = Evaluator(cfg, Store(tmp_path / "r.sqlite"))
    e._lib_entries = []  # no library: only the store is known
    e.store.put("other", verdict(1.0, source_hash="other"))
    return e


def test_a_score_far_above_the_best_known_is_implausible(evaluator):
    assert evaluator._implausible(verdict(1.3), P)


def test_a_score_near_the_best_known_is_not(evaluator):
    assert not evaluator._implausible(verdict(1.2), P)


def test_with_nothing_known_the_absolute_threshold_applies(cfg, tmp_path):
    e = Evaluator(cfg, Store(tmp_path / "empty.sqlite"))
    e._lib_entries = []
    assert e._implausible(verdict(1.6), P) and not e._implausible(verdict(1.4), P)


class FakeWorker:
    """Stands in for the fresh worker process; answers with a fixed verdict and records the request."""
    answer: dict = {}
    requests: list = []

    def __init__(self, *a):
        pass

    def run(self, target, req):
        FakeWorker.requests.append(req)
        return Outcome(True, FakeWorker.answer)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def answer(speedup: float, ok: bool = True) -> dict:
    return {"stage": "done" if ok else "timing", "ok": ok, "reason": "" if ok else "spot check failed", "fault": None,
            "checks": {}, "speedup": {m: {"vendor_default": speedup} for m in ("offline", "server")}, "times": {}}


def rejudge(evaluator, monkeypatch, first: EvalResult, second: dict) -> EvalResult:
    monkeypatch.setattr(ev_mod, "Worker", FakeWorker)
    FakeWorker.answer, FakeWorker.requests = second, []
    evaluator._rejudge(first, JudgeRequest("k.cubin", "cubin", None, P.M, P.N, P.K, evaluator.cfg))
    return first


def test_the_second_opinion_runs_with_other_inputs(evaluator, monkeypatch):
    rejudge(evaluator, monkeypatch, verdict(2.0), answer(2.0))
    assert FakeWorker.requests[0].rejudge


def test_a_failure_in_the_second_opinion_fails_the_candidate(evaluator, monkeypatch):
    r = rejudge(evaluator, monkeypatch, verdict(2.0), answer(0.0, ok=False))
    assert not r.ok and r.stage is Stage.TIMING and "re-judged" in r.reason


def test_the_lower_score_counts(evaluator, monkeypatch):
    r = rejudge(evaluator, monkeypatch, verdict(2.0), answer(1.1))
    assert r.ok and r.speedup["offline"]["vendor_default"] == 1.1 and r.checks["rejudge"]["first_score"] == 2.0
