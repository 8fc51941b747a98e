"""The carried calls' nudge moves an output row past the tolerance at every K: a stale answer (the
row before the nudge) fails the largest-element bound, modelled at its loosest (review 54: a fixed
step of 2 was inside it for most draws at K = 65536, N = 64)."""

import math

from cudal2.config import Config
from cudal2.harness.judge import nudge_step


def ulp16(x: float) -> float:
    return 2.0 ** (math.floor(math.log2(x)) - 10)


def miss_chance(step: float, K: int, N: int) -> float:
    """Chance that all N changed outputs (step * |b|, b ~ N(0,1)) stay within the bound: the
    vendor's largest error taken as a full ulp of 7 sqrt(K) (its largest output, past any grid's
    extreme draw), times max_error_ratio."""
    bound = Config().verify.max_error_ratio * ulp16(7 * math.sqrt(K))
    p_one = math.erf(bound / step / math.sqrt(2))   # P(|b| < bound / step)
    return p_one ** N


def test_a_stale_row_fails_the_largest_element_bound_at_every_k():
    for K in (2 ** e for e in range(4, 18)):
        assert miss_chance(nudge_step(K), K, N=8) < 1e-6, K


def test_a_fixed_step_of_two_would_miss_at_long_k():
    assert miss_chance(2.0, 65536, N=64) > 0.5
