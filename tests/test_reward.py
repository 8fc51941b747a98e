"""Reward shaping: every failure stage and every cheat gets the floor, compiling alone earns
nothing, the speedup term is clipped, infrastructure faults give None."""

import pytest

from cudal2.config import TrainConfig
from cudal2.result import EvalResult, Fault, Stage
from cudal2.rl.reward import USEFUL_SLACK, from_result, shape

CFG = TrainConfig()


@pytest.mark.parametrize("stage", [s.value for s in Stage if s is not Stage.DONE])
def test_each_failure_stage_gets_the_floor(stage):
    assert shape(CFG, stage, ok=False).reward == CFG.floor


def test_a_detected_cheat_gets_the_floor_whatever_its_time():
    r = EvalResult("x", "h", 64, 64, 64).fail(Stage.SANITY, "faster than the physical floor")
    r.speedup = {"offline": {"vendor_default": 50.0}}
    assert from_result(CFG, r).reward == CFG.floor


def test_a_fault_of_the_candidate_gets_the_floor():
    r = EvalResult("x", "h", 64, 64, 64).fail(Stage.TIMING, "hang", Fault.HANG)
    assert from_result(CFG, r).reward == CFG.floor


def test_compiling_alone_earns_nothing_more_than_the_floor():
    p = shape(CFG, Stage.EXACT.value, ok=False)
    assert p.compiled and p.reward == CFG.floor


def test_the_speedup_term_is_clipped():
    top = shape(CFG, "done", ok=True, speedup=CFG.speedup_cap).reward
    assert shape(CFG, "done", ok=True, speedup=100.0).reward == top == pytest.approx(1.0)
    assert CFG.floor < shape(CFG, "done", ok=True, speedup=0.5).reward < top


def test_verified_earns_more_than_any_failure():
    assert shape(CFG, "done", ok=True, speedup=0.01).reward > CFG.floor


def test_an_infrastructure_fault_is_none_not_a_penalty():
    r = EvalResult("x", "h", 64, 64, 64).fail(Stage.LOAD, "harness error: boom")
    r.checks["harness_traceback"] = "Traceback..."
    assert from_result(CFG, r).reward is None


def test_the_ncu_term_is_bounded():
    cfg = TrainConfig(ncu_weight=0.5)
    assert shape(cfg, "done", ok=True, speedup=2.0, ncu=7.0).reward == pytest.approx(1.5)


def _profiled(pipe_pct: float, tflops: dict[str, float], peak: float | None = 1000.0) -> EvalResult:
    r = EvalResult("x", "h", 64, 64, 64)
    r.ok, r.stage = True, Stage.DONE
    r.speedup = {"offline": {"vendor_default": 1.0}, "server": {"vendor_default": 1.0}}
    r.profile = {"summary": {"tensor_pipe_pct": pipe_pct}}
    r.tflops, r.gpu = tflops, ({} if peak is None else {"peak_tflops": peak})
    return r


def test_the_ncu_term_reads_the_profilers_tensor_pipe_share():
    r = _profiled(50.0, {"offline": 450.0, "server": 400.0})
    assert from_result(TrainConfig(ncu_weight=0.2), r).ncu == pytest.approx(0.5)
    top = _profiled(98.3, {"offline": 770.0}, 989.0)   # 8192^3 on the H100 (eval/README.md): kept whole
    assert from_result(TrainConfig(ncu_weight=0.2), top).ncu == pytest.approx(0.983)


def test_tensor_pipe_activity_beyond_the_verified_flop_rate_earns_nothing():
    # review 71: a kernel spinning on mma.sync in the profiled call read ~100% at 4% of peak
    padded, honest = _profiled(99.0, {"offline": 40.0}), _profiled(5.0, {"offline": 40.0})
    cfg = TrainConfig(ncu_weight=0.2)
    assert from_result(cfg, padded).ncu == pytest.approx(USEFUL_SLACK * 0.04)   # not 0.99
    assert from_result(cfg, padded).reward - from_result(cfg, honest).reward <= 0.2 * (USEFUL_SLACK * 0.04 - 0.05) + 1e-12


@pytest.mark.parametrize("missing", ["peak", "tflops"])
def test_without_the_judges_rate_or_peak_there_is_no_ncu_term(missing):
    r = _profiled(80.0, {} if missing == "tflops" else {"offline": 700.0}, None if missing == "peak" else 1000.0)
    assert from_result(TrainConfig(ncu_weight=0.2), r).ncu is None


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 0.0, -1.0])
def test_a_speedup_that_is_no_finite_positive_number_gets_the_floor_never_nan(bad):
    p = shape(CFG, "done", ok=True, speedup=bad)
    assert p.reward == CFG.floor and not p.verified


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 0.0])
def test_a_result_with_an_unusable_speedup_scores_none_and_earns_the_floor(bad):
    from cudal2.search.score import score
    r = EvalResult("x", "h", 64, 64, 64, stage=Stage.DONE, ok=True,
                   speedup={"offline": {"vendor_default": 1.2}, "server": {"vendor_default": bad}})
    assert score(r) is None and from_result(CFG, r).reward == CFG.floor


def test_a_nan_nsight_term_adds_nothing():
    assert shape(CFG, "done", ok=True, speedup=1.0, ncu=float("nan")).reward == shape(CFG, "done", ok=True, speedup=1.0).reward
