"""Review 41: candidate input that stalled the reward service or the judge (see each test)."""

import random
import time

import pytest

from cudal2.harness.launch import parse
from cudal2.problem import M_MODULUS, Problem, parse_claim

from .conftest import BAD, KERNELS

P = Problem(257, 136, 1032)


# --- an M-range claim of many ranges: verified as their union, once ---------------------------

def _many_ranges(r: int, top: int = 100_000) -> str:
    return "// cudal2-shapes: " + ", ".join(f"M=1-{top + i} N=136 K=1032" for i in range(r)) + "\n"


def test_the_many_ranges_kernel_gets_three_full_and_128_light_shapes():
    src = (BAD / "zz41_mrange_many_ranges.cu").read_text()
    full, light = parse_claim(src).verification_shapes(P, parse(src).m_tiles)
    assert len(parse_claim(src).ranges) == 600
    assert [s.M for s in full] == [257, 1, 100_599]
    assert len(light) <= M_MODULUS


@pytest.mark.timeout(60)
def test_the_shape_count_does_not_grow_with_the_number_of_ranges():
    # 600 ranges with four ~512-row tiles gave 1.2 million shapes and 382 s of Python
    tiles = [509, 510, 511, 512]
    one = parse_claim(_many_ranges(1, 10**7)).verification_shapes(P, tiles)
    t0 = time.monotonic()
    many = parse_claim(_many_ranges(600, 10**7)).verification_shapes(P, tiles)
    assert time.monotonic() - t0 < 5
    assert len(many[0]) == len(one[0]) == 3
    assert len(many[1]) <= M_MODULUS + sum(tiles)


def test_the_union_of_the_covering_ranges_is_what_is_verified():
    # the union's ends in full, and every residue class of 128 drawn over the whole union: a
    # kernel wrong only beyond the narrower range still meets the judge there
    claim = parse_claim("// cudal2-shapes: M=200-300 N=136 K=1032, M=100-4000 N=136 K=1032\n")
    full, light = claim.verification_shapes(P, [128], random.Random(1))
    assert {s.M for s in full} == {257, 100, 4000}
    assert {s.M % M_MODULUS for s in light} | {s.M % M_MODULUS for s in full} == set(range(M_MODULUS))
    assert all(100 <= s.M <= 4000 and (s.N, s.K) == (136, 1032) for s in light)
    assert any(s.M > 300 for s in light)


def test_ranges_that_do_not_cover_the_judged_shape_add_nothing():
    claim = parse_claim("// cudal2-shapes: M=1-300 N=136 K=1032, M=5000-9000 N=136 K=1032, M=1-9000 N=64 K=64\n")
    full, light = claim.verification_shapes(P, [128])
    assert max(s.M for s in full + light) <= 300
    assert all((s.N, s.K) == (136, 1032) for s in full + light)


# --- the verification of the declared shapes has one deadline ---------------------------------

class _Clock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


def _judge_with_slow_calls(monkeypatch, cfg, seconds_per_shape: float, light: int, time_it: bool = True):
    """judge.judge over a stand-in Judge whose every shape's verification takes `seconds_per_shape`
    of a fake clock (a kernel whose calls each run just under call_timeout_s); (verdict, shapes run)."""
    from types import SimpleNamespace

    from cudal2.harness import judge as judge_mod
    from cudal2.harness.artifact import JudgeRequest

    clock, ran = _Clock(), []

    class SlowJudge:
        def __init__(self, req, cfg):
            self.checks = {}

        def phase(self, name):
            from contextlib import nullcontext
            return nullcontext()

        def verify(self, p, light=False, carried=None):
            ran.append((p, light))
            clock.now += seconds_per_shape

        def time(self, p):
            raise AssertionError("timed a kernel whose verification ran past its deadline")

        def close(self):
            pass

    monkeypatch.setattr(judge_mod, "time", SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(judge_mod, "device", lambda: SimpleNamespace(name="fake", driver="0", cc=(9, 0), sm_count=1))
    monkeypatch.setattr(judge_mod, "Judge", SlowJudge)
    monkeypatch.setattr(judge_mod, "request_exit", lambda: None)
    monkeypatch.setattr(judge_mod, "release_memory", lambda: None)
    req = JudgeRequest("/nonexistent.cubin", "cubin", None, P.M, P.N, P.K, cfg, [(1, P.N, P.K), (4096, P.N, P.K)],
                       [(m, P.N, P.K) for m in range(2, 2 + light)], time_it=time_it)
    return judge_mod.judge(req), ran


def test_a_kernel_slow_on_purpose_cannot_stretch_the_light_checks_for_hours(monkeypatch, cfg):
    # two calls of ~10 s per light check, 2,170 light checks (128 + four tiles of ~512): 12 hours
    out, ran = _judge_with_slow_calls(monkeypatch, cfg, 20.0, 2170)
    assert not out["ok"] and out["stage"] == "load" and "took over" in out["reason"]
    assert len(ran) * 20.0 <= cfg.verify.max_verify_s + 20.0


def test_a_quick_kernel_verifies_every_declared_shape_within_the_deadline(monkeypatch, cfg):
    out, ran = _judge_with_slow_calls(monkeypatch, cfg, 0.05, 2170, time_it=False)
    assert out["ok"], out["reason"]
    assert len(ran) == 1 + 2 + 2170 and sum(light for _, light in ran) == 2170


# --- a completion that cannot be written as UTF-8 ----------------------------------------------

def test_a_lone_surrogate_in_a_completion_is_a_parse_failure_not_a_crash(cfg):
    # json.loads('"\\ud800"') gives one: it raised UnicodeEncodeError out of RewardService.score
    from cudal2.rl.service import RewardService
    src = (KERNELS / "good" / "naive_v2.cu").read_text()
    parts = RewardService(cfg, gpu=False).score(["```cuda\n" + src + "// \ud800\n```\n"], [Problem(64, 64, 64)])
    assert parts[0].stage == "parse" and parts[0].reward == cfg.train.floor
