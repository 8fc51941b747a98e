"""Review 39: candidate input that stopped the reward service or stalled it (see each test)."""

import pytest

from cudal2.harness.build import BuildResult
from cudal2.harness.launch import parse
from cudal2.problem import Problem, ProblemError, ShapeClaim, parse_claim
from cudal2.result import Stage

from .conftest import BAD, KERNELS

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


# --- the PTX rules' time: bounded whatever PTX a candidate writes -------------------------------

def _ptx(decl: str, body: str) -> str:
    return (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(\n.param .u64 k_param_0\n)\n"
            f"{{\n{decl}\n{body}ret;\n}}\n")


@pytest.mark.timeout(60)
def test_a_long_copy_chain_of_a_policy_register_is_read_in_linear_time():
    # _policies' passes to a fixpoint took one pass per link: 4,000 links 43 s, 64,000 hours
    from cudal2.harness.cubin import _policies, _statements
    n = 64000
    body = "createpolicy.fractional.L2::evict_last.b64 p0, 1.0;\n" + "".join(
        f"mov.b64 p{i + 1}, p{i};\n" for i in range(n))
    known = _policies(_statements(body))
    assert len(known) == n + 1   # the same least fixpoint: every link a policy word


@pytest.mark.timeout(60)
def test_a_long_copy_chain_of_a_parameter_address_is_read_in_linear_time():
    # _classes, the same passes: each link of a copy of the parameter's address keeps its class
    from cudal2.harness.cubin import _classes, _statements
    n = 64000
    body = "mov.b64 q0, k_param_0;\n" + "".join(f"mov.b64 q{i + 1}, q{i};\n" for i in range(n)) + \
        "cvta.param.u64 g, q7;\n"
    cls = _classes(_statements(body), {"k_param_0": 8})
    assert cls[f"q{n}"] == "P:k_param_0" and cls["g"] == "G:k_param_0" and len(cls) == n + 2


@pytest.mark.timeout(60)
def test_the_policy_path_search_is_bounded_and_refuses_past_its_budget():
    from cudal2.harness.cubin import statement_violations
    n = 8192
    body = ("setp.lt.s32 q, 1, 0;\n@q bra END;\n" + "createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n" * n
            + "END:\n" + "ld.global.L2::cache_hint.b32 t, [x], pol;\n" * n)
    v = statement_violations(_ptx(".reg .pred q;\n.reg .b64 pol, x;\n.reg .b32 t;\nmov.b64 x, 0;", body))
    assert any("than the rule can check" in x for x in v)


def test_the_path_search_still_accepts_a_policy_written_on_every_path():
    # one search per write gives the old verdicts: a write before the read on every path passes,
    # one a guarded branch jumps over does not
    from cudal2.harness.cubin import statement_violations
    decl = ".reg .pred q;\n.reg .b64 pol, x;\n.reg .b32 t;\nmov.b64 x, 0;"
    ok = "createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n" + "ld.global.L2::cache_hint.b32 t, [x], pol;\n" * 50
    assert statement_violations(_ptx(decl, ok)) == []
    jumped = "setp.lt.s32 q, 1, 0;\n@q bra L;\n" + ok.replace("ld.", "L:\nld.", 1)
    assert any("reaches unwritten" in x for x in statement_violations(_ptx(decl, jumped)))


@pytest.mark.timeout(300)
def test_the_blowup_kernel_fails_the_build_within_seconds(cfg):
    import time

    from cudal2.harness.build import build
    t0 = time.monotonic()
    r = build((BAD / "zz39_policy_path_search_blowup.cu").read_text(), cfg.build)
    assert not r.ok and r.stage == "build" and "than the rule can check" in r.reason
    assert time.monotonic() - t0 < 120


def test_an_exception_of_the_gemm_judge_replaces_its_worker_and_unloads_nothing(monkeypatch):
    # review 39: judge() caught only Failed; an exception of its own unloaded the module under
    # launches that may still run and kept the worker for the next candidate
    from types import SimpleNamespace

    from cudal2.config import Config
    from cudal2.harness import judge as judge_mod
    from cudal2.harness.artifact import JudgeRequest

    exits, closed = [], []

    class Broken:
        checks: dict = {}

        def __init__(self, req, cfg):
            pass

        def phase(self, name):
            raise RuntimeError("cudaErrorLaunchFailure")   # e.g. a driver error the judge did not foresee

        def close(self):
            closed.append(1)

    monkeypatch.setattr(judge_mod, "device", lambda: SimpleNamespace(name="x", driver="0", cc=(9, 0), sm_count=132))
    monkeypatch.setattr(judge_mod, "Judge", Broken)
    monkeypatch.setattr(judge_mod, "request_exit", lambda: exits.append(1))
    with pytest.raises(RuntimeError):
        judge_mod.judge(JudgeRequest("x.cubin", "cubin", {}, 128, 128, 64, Config()))
    assert exits and not closed
