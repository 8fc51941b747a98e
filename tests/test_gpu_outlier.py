"""The judge's outlier trials (guards' modes 4-9) on the GPU, as `judge.Trial` draws them: values
off mode 0's grid (multiples of one constant); A at an activation's scale and B at a weight's, each
a secret continuous scale (not a power of two); outliers past every other trial's |x| <= 3.4648 at
unit scale, in whole columns and single elements, in A ('outlier'), in B ('outlier_w') or in both,
never at one column ('outlier_split': a term of two would overflow fp16 outputs); finite outputs at
a long K; the same bits from the same seed (`buffers.matches` regenerates instead of copying)."""

import math

import cupy as cp
import numpy as np
import pytest

from cudal2.harness import buffers, guards
from cudal2.harness.judge import Trial
from cudal2.problem import Problem

pytestmark = pytest.mark.gpu

BOUNDED = 3.4648   # mode 0's largest value
GRID = 1.7320508 / 65536   # mode 0's values are multiples of this (review 74)


def scale_of(x: np.ndarray) -> float:
    """log2 of the scale, read off the median of |x| (|N(0, 1)|'s is 0.6745)."""
    return math.log2(np.median(x) / 0.6745)


def unit(x: cp.ndarray) -> np.ndarray:
    """|x| at unit scale."""
    a = cp.abs(x.astype(cp.float32)).get()
    return a / 2.0 ** scale_of(a)


def on_grid(x: np.ndarray) -> float:
    """The share of small values (|x| < 2^-8, where fp16 resolves the grid) within a tenth of a step
    of a multiple of GRID."""
    small = x[(x > 0) & (x < 2 ** -8)].astype(np.float64)
    q = small / GRID
    return float((np.abs(q - np.round(q)) < 0.1).mean())


@pytest.fixture(scope="module")
def trial():
    return Trial.make(Problem(1024, 1536, 4096), 0, 256)


def drawn(t: Trial, dist: str):
    seed = t.fill(dist)
    return seed, unit(t.a), unit(t.b)


def test_mode_0_is_on_its_grid_and_the_outlier_modes_are_not(trial):
    x = cp.empty((1024, 4096), cp.float16)
    buffers.fill(x, "normal", buffers.new_seed())
    assert on_grid(np.abs(x.astype(cp.float32).get())) > 0.9   # (the check can see a grid)
    for dist in ("outlier", "outlier_w", "outlier_split"):
        trial.fill(dist)
        for y in (trial.a, trial.b):
            assert on_grid(cp.abs(y.astype(cp.float32)).get()) < 0.4   # chance: 0.2


def test_the_outlier_trial_puts_outliers_in_a_alone(trial):
    _, a, b = drawn(trial, "outlier")
    assert a.max() > 500 and (a > BOUNDED).mean() > 0.002 and b.max() < 7
    assert 0.97 < (a <= BOUNDED).mean() < 0.999   # most values stay Gaussian


def test_the_weight_trial_puts_them_in_b_alone(trial):
    _, a, b = drawn(trial, "outlier_w")
    assert b.max() > 500 and a.max() < 7


def test_whole_columns_are_outliers(trial):
    # a channel: many rows of one column past the bound (2x puts ~8% of N(0, 1) past it), where
    # single-element outliers put well under 1% of a column there
    _, a, _ = drawn(trial, "outlier")
    assert ((a > BOUNDED).mean(axis=0) > 0.05).sum() >= 4


def test_the_split_trial_never_holds_outliers_of_both_at_one_column(trial):
    _, a, b = drawn(trial, "outlier_split")
    assert (a > BOUNDED).any() and (b > BOUNDED).any()
    assert not ((a > BOUNDED).any(axis=0) & (b > BOUNDED).any(axis=0)).any()
    trial.rotate()   # a new A, the same B: still paired
    a = unit(trial.a)
    assert not ((a > BOUNDED).any(axis=0) & (b > BOUNDED).any(axis=0)).any()


@pytest.mark.parametrize("dist", ["outlier", "outlier_w", "outlier_split"])
def test_every_trial_has_an_activation_and_a_weight_at_continuous_scales(trial, dist):
    a_scales, b_scales = [], []
    for _ in range(8):
        trial.fill(dist)
        a_scales.append(scale_of(cp.abs(trial.a.astype(cp.float32)).get()))
        b_scales.append(scale_of(cp.abs(trial.b.astype(cp.float32)).get()))
    assert all(-3.1 < s < 2.1 for s in a_scales) and all(-7.1 < s < -3.9 for s in b_scales)
    off = [abs(s - round(s)) for s in a_scales + b_scales]
    assert max(off) > 0.2 and len({round(s, 1) for s in a_scales}) >= 4   # not powers of two, not one scale


def test_the_same_seed_gives_the_same_bits(trial):
    seed = trial.fill("outlier_split")
    da, db = trial.drawn
    assert buffers.matches(trial.a, da, seed) and buffers.matches(trial.b, db, trial.b_seed)
    assert not buffers.matches(trial.a, da, seed ^ 2)


def test_a_guard_refuses_the_outlier_modes():
    # (under a Guard's set keys every timed call would get one scale and outlier pattern: review 74)
    with pytest.raises(ValueError):
        guards.Guard([cp.empty((8, 8), cp.float16)], 64, fmode="act_outlier")


@pytest.mark.parametrize("dist", ["outlier", "outlier_w", "outlier_split"])
def test_its_outputs_stay_finite_at_a_long_k(dist):
    t = Trial.make(Problem(256, 512, 65536), 0, 256)
    for _ in range(3):
        t.fill(dist)
        c = t.a.astype(cp.float32) @ t.b.astype(cp.float32).T
        assert float(cp.abs(c).max()) < 65504 / 2
