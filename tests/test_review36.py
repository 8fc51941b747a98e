"""Review 36: candidate input that raised inside the harness instead of failing the candidate.
A raise there crashed the reward service (the launch block's JSON) or came back as a "harness
error", which the RL reward reads as an infrastructure fault: reward None, no penalty."""

import ctypes
import json

import pytest

from cudal2.harness import driver, launch, loader, module
from cudal2.harness.launch import SpecError
from cudal2.problem import Problem, ProblemError, parse_claim

from .conftest import BAD


def test_a_launch_block_nested_past_the_recursion_limit_is_a_spec_error():
    with pytest.raises(SpecError, match="cannot be read"):
        launch.parse((BAD / "zz36_spec_json_recursion.cu").read_text())


def test_a_launch_block_with_an_overlong_integer_is_a_spec_error():
    src = ('/* cudal2-launch {"kernels": [{"name": "k", "grid": [%s], "block": [1], "args": []}]} */'
           % ("9" * 5000))
    with pytest.raises(SpecError):
        launch.parse(src)


def test_the_nested_launch_block_fails_the_build_and_gets_the_floor(cfg, tmp_path):
    from cudal2.harness import trust
    from cudal2.harness.build import build
    from cudal2.rl.service import RewardService
    src = (BAD / "zz36_spec_json_recursion.cu").read_text()
    assert trust.refusal(src, "untrusted", {}, Problem(257, 136, 1032)) is None
    cfg.build.cache_dir = str(tmp_path)
    r = build(src, cfg.build)
    assert not r.ok and r.stage == "build" and "launch spec" in r.reason
    (parts,) = RewardService(cfg, gpu=False).score(["```cuda\n" + src + "```"], [Problem(257, 136, 1032)])
    assert parts.reward == cfg.train.floor and parts.stage == "build"


def test_an_overlong_shape_claim_is_a_problem_error():
    with pytest.raises(ProblemError):
        parse_claim("// cudal2-shapes: " + "9" * 5000 + "x8x8")
    with pytest.raises(ProblemError):
        parse_claim("// cudal2-shapes: M=1-" + "9" * 5000 + " N=8 K=8")


def test_the_gemm_loader_refuses_a_task_spec(tmp_path):
    spec = launch.parse((BAD / "zz36_task_spec_in_gemm_judge.cu").read_text())
    path = tmp_path / "kernel.cubin"
    path.write_bytes(b"")
    for s in (spec.to_dict(), spec):
        with pytest.raises(loader.LoadError, match="general task 'gemm-bias'"):
            loader.load_artifact(str(path), "cubin", s)


def test_a_call_that_binds_no_value_for_an_argument_returns_an_error(monkeypatch):
    spec = launch.parse((BAD / "zz36_task_spec_in_gemm_judge.cu").read_text())

    class Lib:
        def cuLaunchKernelEx(self, *a):
            raise AssertionError("launched with an unbound argument")

    monkeypatch.setattr(driver, "_lib", Lib())
    m = object.__new__(module.Module)
    m.spec, m._fns, m._smem_set, m._resolved = spec, {"k": ctypes.c_void_p()}, {}, {}
    assert m.call(1 << 20, 2 << 20, 3 << 20, 257, 136, 1032, 0, 0, 0) == 1


def _judge_whose_trials_raise(monkeypatch, err):
    """A Judge with no GPU state whose verification's first allocation raises `err`."""
    from cudal2.config import Config
    from cudal2.harness import judge

    def make(p, ws, gap):
        raise err

    monkeypatch.setattr(judge.Trial, "make", staticmethod(make))
    j = object.__new__(judge.Judge)
    j.cfg, j.cand = Config(), None
    return j


@pytest.mark.parametrize("how", ["pool", "cudaMalloc"])
def test_a_declared_shape_that_does_not_fit_fails_the_candidate(monkeypatch, how):
    import cupy as cp

    from cudal2.harness import judge
    from cudal2.result import Stage

    # cupy's pool, or (on the H100) a direct cudaMalloc: cudaErrorMemoryAllocation
    err = cp.cuda.memory.OutOfMemoryError(1 << 40, 0) if how == "pool" else cp.cuda.runtime.CUDARuntimeError(2)
    with pytest.raises(judge.Failed) as e:
        _judge_whose_trials_raise(monkeypatch, err).verify(Problem(10**12, 136, 1032))
    assert e.value.stage == Stage.LOAD and "do not fit" in e.value.reason


def test_another_runtime_error_in_verification_is_not_read_as_the_claims(monkeypatch):
    import cupy as cp

    # an illegal address: not an allocation failure
    j = _judge_whose_trials_raise(monkeypatch, cp.cuda.runtime.CUDARuntimeError(700))
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
        j.verify(Problem(257, 136, 1032))
