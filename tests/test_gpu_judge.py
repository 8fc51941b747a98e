"""The judge on the GPU: honest kernels pass, each cheating or faulting kernel fails at its stage,
a fault costs one candidate while the run goes on, and one candidate never sways another's verdict.

Contract v2 files are judged as untrusted (as every LLM completion is); the v1 files of the suite
are judged as a user's own files, so the v1 runtime checks stay covered."""

import pytest

from cudal2.harness.evaluate import Candidate, Evaluator
from cudal2.problem import Problem
from cudal2.result import Stage
from cudal2.search.score import score

from .conftest import KERNELS, expected_bad

pytestmark = pytest.mark.gpu

SHAPE = Problem(257, 136, 1032)  # odd M and N: tails; K large enough that fp16 partial sums show
V2_GOOD = ["naive_v2.cu", "tiled_v2.cu", "splitk_v2.cu", "tma_v2.cu"]
V1_GOOD = ["naive.cu", "wmma_tiled.cu", "splitk_workspace.cu"]


def cand(folder: str, name: str, contract: str | None = None) -> Candidate:
    src = (KERNELS / folder / name).read_text()
    v2 = contract == "v2" if contract else name.endswith("_v2.cu")
    return Candidate(name, src, trust="untrusted" if v2 else "user")


@pytest.fixture(scope="module")
def evaluator(fast_cfg):
    ev = Evaluator(fast_cfg)
    yield ev
    ev.close()


@pytest.mark.parametrize("name", V2_GOOD + V1_GOOD)
def test_honest_kernel_passes(evaluator, name):
    (r,) = evaluator.evaluate([cand("good", name)], SHAPE)
    assert r.ok, f"{name} failed at {r.stage.value}: {r.reason}"
    assert r.times["offline"]["candidate"].median_us > 0
    assert set(r.speedup["offline"]) >= {"cublas", "cublaslt", "cublaslt_autotune"}
    spot = r.checks["timing"]
    assert spot["spot_offline"][0]["checked"] == spot["spot_offline"][0]["expected"] > 0  # every timed call checked
    assert spot["spot_server"][0]["failed"] == 0


@pytest.mark.parametrize("name", sorted(expected_bad()))
def test_cheating_kernel_fails_at_its_stage(evaluator, name):
    want = expected_bad()[name]
    try:
        judged_as_expected(evaluator, name, want)
    except AssertionError as e:
        if "open" in want:  # a known hole (see its entry): it is run, and recorded, until the judge closes it
            pytest.xfail(f"{want['open']}: {e}")
        raise


def judged_as_expected(evaluator, name: str, want: dict) -> None:
    stages = want["stage"] if isinstance(want["stage"], list) else [want["stage"]]
    (r,) = evaluator.evaluate([cand("bad", name, want.get("contract", "v1"))], SHAPE)
    # a harness error fails at "load" too, but the reward reads it as no verdict (None): never a cheat's
    assert "harness_traceback" not in r.checks, f"{name}: harness error: {r.reason}"
    if r.ok:  # allowed only where the cheat's channel is closed and it ran honestly, gaining nothing
        assert "done" in stages, f"{name} passed every check"
        assert score(r) < want["max_speedup"], f"{name} passed and scored {score(r):.2f}"
        return
    assert r.stage.value in stages, f"{name}: failed at {r.stage.value} ({r.reason}), expected {stages}"
    assert (r.fault.value if r.fault else None) == want["fault"], f"{name}: fault {r.fault}: {r.reason}"


def test_faults_cost_one_candidate_each(evaluator):
    names = ["v2_hang.cu", "naive_v2.cu", "v2_illegal_address.cu", "naive_v2.cu", "host_segfault.cu", "naive_v2.cu"]
    cands = [cand("good" if n == "naive_v2.cu" else "bad", n, "v2" if n.startswith(("v2_", "naive_v2")) else "v1")
             for n in names]
    results = evaluator.evaluate(cands, Problem(64, 64, 64))
    assert [r.ok for r in results] == [False, True, False, True, False, True]
    assert [r.fault.value if r.fault else None for r in results[::2]] == ["hang", "cuda_error", "crash"]


def test_a_cheat_between_two_honest_candidates_sways_neither(evaluator):
    names = [("good", "tiled_v2.cu", "v2"), ("bad", "m5_skip_tile_if_c_not_nan.cu", "v2"), ("good", "tiled_v2.cu", "v2")]
    first, cheat, last = evaluator.evaluate([cand(*x) for x in names], SHAPE, reuse=False)
    assert first.ok and not cheat.ok and last.ok, (first.reason, last.reason)
    assert last.checks["timing"]["spot_offline"][0]["failed"] == 0


def test_a_private_stream_fails_even_with_the_policy_off(evaluator, monkeypatch):
    # v1 (a user's own file): defence in depth behind the policy. Work on a private stream must fail a
    # dynamic check: the device is drained after every call, and every timed call is spot-checked.
    from cudal2.harness import build as build_mod
    monkeypatch.setattr(build_mod.policy, "check", lambda source, extra=(): [])
    for _ in range(3):
        (r,) = evaluator.evaluate([cand("bad", "private_stream.cu", "v1")], SHAPE, reuse=False)
        assert r.stage is not Stage.POLICY, r.reason
        assert not r.ok, "work on a private stream passed every check"


def test_an_m_range_kernel_is_verified_at_fresh_m_of_every_residue(evaluator):
    (r,) = evaluator.evaluate([cand("bad", "m9_mrange_predictable.cu", "v2")], Problem(257, 136, 1032))
    assert not r.ok and r.stage.value in ("exact", "gaussian"), r.reason


def test_an_implausible_score_is_judged_again_in_a_fresh_process():
    from cudal2.config import Config
    cfg = Config.load(timing={"repeats": 3, "server_calls": 4, "autotune_k": 4, "max_sets": 8},
                      verify={"call_timeout_s": 5.0, "rejudge_above": 1e-6})  # any score is implausible here
    ev = Evaluator(cfg)
    try:
        (r,) = ev.evaluate([cand("good", "naive_v2.cu")], SHAPE)
    finally:
        ev.close()
    assert r.ok, r.reason
    assert r.checks["rejudge"]["stage"] == "done" and r.checks["rejudge"]["second_score"] > 0


def test_the_exact_comparison_counts_a_nan_output_once():
    import cupy as cp

    from cudal2.harness import compare
    out, ref = cp.ones((4, 4), cp.float16), cp.ones((4, 4), cp.float64)
    out[0, 0], out[1, 1] = cp.nan, 2
    assert compare.exact(out, ref) == (False, {"mismatches": 2, "elements": 16})


def test_a_memo_kept_where_the_library_keeps_state_fails_in_the_carried_calls(evaluator):
    # review 53: m3 keys its memo on pointers and 256 sampled elements; the carried calls leave C and
    # the workspace alone, so it answers the call after the nudge with the stale C
    (r,) = evaluator.evaluate([cand("bad", "m3_workspace_memo.cu", "v2")], SHAPE)
    assert not r.ok and r.stage == Stage.REPEAT, (r.stage, r.reason)
    (honest,) = evaluator.evaluate([cand("good", "splitk_v2.cu")], SHAPE)   # a workspace kept honestly
    carried = [c for c in honest.checks[str(SHAPE)]["repeat"] if "carried" in c]
    assert honest.ok and len(carried) >= 3 and carried[-1]["nudged"], honest.reason
    rotated = [c for c in honest.checks[str(SHAPE)]["repeat"] if "rotated" in c]   # review 55
    assert len(rotated) >= 4 and {c["slot"] for c in rotated} == {0, 1, 2}
