"""The paired speedup estimator (no GPU: it works on recorded series)."""

from cudal2.harness.timing import _stats, paired_speedup


def test_paired_speedup_survives_a_power_state_switch_between_two_runners_of_a_round():
    # The GPU alternates between a fast and a 11% slower power state; runners of one round mostly
    # share it. The candidate is truly 2% slower. In round 7 the state switched between the two
    # runners, which moves the candidate's median into the slow mode and the baseline's into the fast:
    # the ratio of medians reads 0.88x, the median of per-round ratios the true 0.98x.
    state = [1.0] * 8 + [1.11] * 7
    cand_state = state[:7] + [1.11] + state[8:]
    base, cand = _stats([100.0 * s for s in state]), _stats([102.0 * s for s in cand_state])
    assert base.median_us / cand.median_us < 0.89
    assert abs(paired_speedup(base, cand) - 100 / 102) < 1e-9


def test_paired_speedup_falls_back_to_medians_without_matching_rounds():
    base, cand = _stats([100.0, 110.0, 120.0]), _stats([50.0, 60.0])
    assert paired_speedup(base, cand) == base.median_us / cand.median_us
