"""Results persist as they arrive, and a rerun resumes instead of re-evaluating."""

import pytest

from cudal2.harness import evaluate as ev_mod
from cudal2.harness.evaluate import Candidate, Evaluator
from cudal2.harness.store import Store, StoreError
from cudal2.problem import Problem
from cudal2.result import EvalResult, Stage

from .conftest import KERNELS

P = Problem(64, 64, 64)
# Candidates whose verdicts need no GPU: rejected by the policy or by the compiler.
CANDS = [Candidate("sync", (KERNELS / "bad" / "sync_device.cu").read_text(), trust="user"),
         Candidate("syntax", (KERNELS / "bad" / "syntax_error.cu").read_text(), trust="user")]


def test_result_survives_reopening(tmp_path):
    s = Store(tmp_path / "r.sqlite")
    r = EvalResult("k", "h", 1, 2, 8).fail(Stage.EXACT, "wrong")
    s.put("key", r)
    s.close()
    assert Store(tmp_path / "r.sqlite").get("key") == r


def test_rerun_resumes_without_evaluating_again(cfg, tmp_path, monkeypatch):
    store = Store(tmp_path / "r.sqlite")
    first = Evaluator(cfg, store).evaluate(CANDS, P)
    assert [r.stage for r in first] == [Stage.POLICY, Stage.BUILD]

    def no_build(*a, **k):
        raise AssertionError("a stored result was evaluated again")
    monkeypatch.setattr(ev_mod, "build", no_build)
    again = Evaluator(cfg, Store(tmp_path / "r.sqlite")).evaluate(CANDS, P)
    assert again == first


def test_partial_run_keeps_what_finished(cfg, tmp_path, monkeypatch):
    """A run killed after its first candidate: the rerun evaluates only the second."""
    store = Store(tmp_path / "r.sqlite")
    Evaluator(cfg, store).evaluate(CANDS[:1], P)
    built = []
    real = ev_mod.build
    monkeypatch.setattr(ev_mod, "build", lambda src, c: built.append(src) or real(src, c))
    Evaluator(cfg, Store(tmp_path / "r.sqlite")).evaluate(CANDS, P)
    assert built == [CANDS[1].source]


def test_corrupt_database_is_a_clear_error(tmp_path):
    f = tmp_path / "r.sqlite"
    f.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="r.sqlite"):
        Store(f)
