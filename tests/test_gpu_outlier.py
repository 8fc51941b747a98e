"""The judge's 'outlier' inputs (guards' mode 4) on the GPU, as `judge.Trial` draws them: values
past every other trial's |x| <= 3.4648, up to ~3500, in whole columns and single elements; never an
outlier in A and in B at one column (a term of two would overflow fp16 outputs); the same bits from
the same seed (spot checks and `buffers.matches` regenerate instead of copying)."""

import cupy as cp
import numpy as np
import pytest

from cudal2.harness import buffers
from cudal2.harness.judge import Trial
from cudal2.problem import Problem

pytestmark = pytest.mark.gpu

BOUNDED = 3.4648   # mode 0's largest value


@pytest.fixture(scope="module")
def drawn():
    t = Trial.make(Problem(2048, 2048, 4096), 0, 256)
    seed = t.fill("outlier")
    a, b = (cp.abs(x.astype(cp.float32)).get() for x in (t.a, t.b))
    yield t, seed, a, b


def test_it_draws_far_past_every_other_trial(drawn):
    _, _, a, b = drawn
    assert a.max() > 500 and b.max() > 500 and (a > BOUNDED).mean() > 0.001


def test_most_values_stay_gaussian(drawn):
    _, _, a, b = drawn
    assert 0.97 < (a <= BOUNDED).mean() < 0.999 and 0.97 < (b <= BOUNDED).mean() < 0.999


def test_whole_columns_are_outliers(drawn):
    _, _, a, _ = drawn
    # a channel: many rows of one column past the bound (2x puts ~8% of N(0, 1) past it), where
    # single-element outliers put ~0.3% of a column there
    assert ((a > BOUNDED).mean(axis=0) > 0.05).sum() >= 2


def test_a_and_b_never_hold_outliers_at_one_column(drawn):
    _, _, a, b = drawn
    assert not ((a > BOUNDED).any(axis=0) & (b > BOUNDED).any(axis=0)).any()


def test_a_rotated_a_still_pairs_with_b(drawn):
    t, _, _, b = drawn
    t.rotate()
    a = cp.abs(t.a.astype(cp.float32)).get()
    assert (a > BOUNDED).any() and not ((a > BOUNDED).any(axis=0) & (b > BOUNDED).any(axis=0)).any()


def test_the_same_seed_gives_the_same_bits(drawn):
    t, seed, _, _ = drawn
    t.slot = 0
    assert buffers.matches(t.a, "outlier", seed) and buffers.matches(t.b, "outlier", t.b_seed)
    assert not buffers.matches(t.a, "outlier", seed ^ 2)


def test_its_outputs_stay_finite(drawn):
    t, _, _, _ = drawn
    c = t.a.astype(cp.float32) @ t.b.astype(cp.float32).T
    assert float(cp.abs(c).max()) < 65504 / 2 and np.isfinite(float(c.sum()))
