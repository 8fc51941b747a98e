"""The judge's outlier trials (guards' modes 4-6) on the GPU, as `judge.Trial` draws them: each
operand scaled by a secret 2^-e (e in 0..7, 0..3 where it has outliers), outliers past every other trial's |x| <= 3.4648, up to
~3500 at unit scale, in whole columns and single elements, in A ('outlier'), in B ('outlier_w') or
in both, never at one column ('outlier_split': a term of two would overflow fp16 outputs); the same
bits from the same seed (`buffers.matches` regenerates instead of copying)."""

import math

import cupy as cp
import numpy as np
import pytest

from cudal2.harness import buffers
from cudal2.harness.judge import Trial
from cudal2.problem import Problem

pytestmark = pytest.mark.gpu

BOUNDED = 3.4648   # mode 0's largest value


def unit(x: cp.ndarray) -> np.ndarray:
    """|x| at unit scale: divided by its 2^-e, read off the median (|N(0, 1)|'s is 0.6745)."""
    a = cp.abs(x.astype(cp.float32)).get()
    return a / 2.0 ** round(math.log2(np.median(a) / 0.6745))


@pytest.fixture(scope="module")
def trial():
    return Trial.make(Problem(1024, 1536, 4096), 0, 256)


def drawn(t: Trial, dist: str):
    seed = t.fill(dist)
    return seed, unit(t.a), unit(t.b)


def test_the_outlier_trial_puts_outliers_in_a_alone(trial):
    _, a, b = drawn(trial, "outlier")
    assert a.max() > 500 and (a > BOUNDED).mean() > 0.002 and b.max() <= BOUNDED
    assert 0.97 < (a <= BOUNDED).mean() < 0.999   # most values stay Gaussian


def test_the_weight_trial_puts_them_in_b_alone(trial):
    _, a, b = drawn(trial, "outlier_w")
    assert b.max() > 500 and a.max() <= BOUNDED


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


def test_scales_reach_a_models_weights(trial):
    scales = set()
    for _ in range(24):
        trial.fill("outlier")
        x = cp.abs(trial.b.astype(cp.float32)).get()
        scales.add(round(math.log2(np.median(x) / 0.6745)))
    assert scales <= set(range(-7, 1)) and min(scales) <= -5 and len(scales) >= 4


def test_the_same_seed_gives_the_same_bits(trial):
    seed, _, _ = drawn(trial, "outlier_split")
    assert buffers.matches(trial.a, "split", seed) and buffers.matches(trial.b, "split", trial.b_seed)
    assert not buffers.matches(trial.a, "split", seed ^ 2)


@pytest.mark.parametrize("dist", ["outlier", "outlier_w", "outlier_split"])
def test_its_outputs_stay_finite(trial, dist):
    for _ in range(3):
        trial.fill(dist)
        c = trial.a.astype(cp.float32) @ trial.b.astype(cp.float32).T
        assert float(cp.abs(c).max()) < 65504 / 2
