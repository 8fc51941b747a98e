"""The cancelling trial separates fp16 partial sums from fp32 accumulation (a CPU model of the
arithmetic; `python eval/judge_v2.py separation` measures the real kernels on the GPU)."""

import numpy as np
import pytest

from cudal2.config import VerifyConfig

from cudal2.harness.guards import sign_block


def inputs(dist: str, M: int, N: int, K: int, rng):
    """As the judge draws them (`judge.TRIAL_DISTS`): both Gaussian ('normal', what timed calls get),
    or the cancelling trial: A 'positive' (U(0.5, 1)), B 'signed' (U(0.5, 1), sign flipped every
    other sign block)."""
    if dist == "normal":
        return rng.standard_normal((M, K)), rng.standard_normal((N, K))
    b = (0.5 + 0.5 * rng.random((N, K))) * np.where((np.arange(K) // sign_block(K)) % 2 == 0, 1.0, -1.0)
    return 0.5 + 0.5 * rng.random((M, K)), b


def gemm(a, b, chunk: int, round_partials: bool):
    """fp32 accumulation over k-chunks of `chunk` terms; each chunk's fp32 partial optionally rounded to fp16."""
    acc = np.zeros((a.shape[0], b.shape[0]), np.float32)
    for k0 in range(0, a.shape[1], chunk):
        part = (a[:, k0:k0 + chunk].astype(np.float32) @ b[:, k0:k0 + chunk].astype(np.float32).T)
        acc += part.astype(np.float16).astype(np.float32) if round_partials else part
    return acc.astype(np.float16)


def ratio(dist: str, K: int, chunk: int, round_partials: bool, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    a, b = (x.astype(np.float16) for x in inputs(dist, 64, 64, K, rng))
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    vendor = gemm(a, b, 16, False)            # fp32 accumulation, mma-sized k steps
    err = lambda c: np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref)  # noqa: E731
    return err(gemm(a, b, chunk, round_partials)) / err(vendor)


BOUND = VerifyConfig().error_ratio


@pytest.mark.parametrize("K", [64, 256, 1032, 4096])
@pytest.mark.parametrize("chunk", [16, 32])
def test_fp16_partial_sums_fail_the_cancelling_trial(K, chunk):
    assert ratio("cancel", K, chunk, True) > 3 * BOUND


@pytest.mark.parametrize("K", [256, 1032, 4096])
@pytest.mark.parametrize("chunk", [1, 8, 64])
def test_fp32_accumulation_in_any_order_passes_it(K, chunk):
    assert ratio("cancel", K, chunk, False, seed=1) < BOUND


@pytest.mark.parametrize("K", [256, 1032, 4096])
def test_gaussian_trial_rejects_fp16_partials_of_16(K):
    # The bound is tight enough that Gaussian inputs alone reject 16-term fp16 partials (1.4x).
    assert ratio("normal", K, 16, True) > BOUND


@pytest.mark.parametrize("K", [256, 1032, 4096])
def test_gaussian_trial_passes_fp32_accumulation(K):
    assert ratio("normal", K, 1, False, seed=2) < BOUND


# --- the outlier trials (guards' modes 4-6): real data's ranges ------------------------------------

def outlier_inputs(trial: str, M: int, N: int, K: int, rng):
    """A model of the three (guards' `real_like`): N(0, 1) at a continuous scale, 2^[-5, 2) for A (an
    activation) and 2^[-8, -4) for B (a weight), times per-row and per-column factors in (2^-4, 1];
    outliers up to 2^j (chance 2^-j, j <= 10) in whole columns (1 in 256) and single elements (1 in
    64) of A ('outlier'), of B ('outlier_w'), or of both in a split of the columns
    ('outlier_split'), which also has about four columns where A is 2^4-2^10 larger and one row in
    16 of B holds a super weight sized so that each such term is at most 4096. In A, seven in eight
    outlier and super columns keep one sign in every row, and in 'outlier' and 'outlier_w' one row
    in 64 is zero (padding)."""
    a_half = rng.random(K) < 0.5
    cols = {"outlier": (np.ones(K, bool), np.zeros(K, bool)), "outlier_w": (np.zeros(K, bool), np.ones(K, bool)),
            "outlier_split": (a_half, ~a_half)}[trial]
    sup = (rng.random(K) < 4 / K) if trial == "outlier_split" else np.zeros(K, bool)
    ja = rng.integers(4, 11, K)
    s_a, s_b = 2.0 ** (-5 + 7 * rng.random()), 2.0 ** (-8 + 4 * rng.random())

    def draw(rows, mine, scale, act):
        x = rng.standard_normal((rows, K))
        col = (rng.random(K) < 1 / 256) & mine & ~sup
        elem = (rng.random((rows, K)) < 1 / 64) & mine & ~sup
        elem &= ~col
        if act:   # a channel's sign
            signed = (col | sup) & (rng.random(K) < 7 / 8)
            x[:, signed] = np.abs(x[:, signed]) * np.where(rng.random(signed.sum()) < 0.5, 1.0, -1.0)
        x[:, col] *= 2.0 ** (np.minimum(rng.geometric(0.5, col.sum()), 10) - rng.random(col.sum()))
        x[elem] *= 2.0 ** (np.minimum(rng.geometric(0.5, elem.sum()), 10) - rng.random(elem.sum()))
        return x * scale * 2.0 ** (-2 * rng.random((rows, 1)) - 2 * rng.random(K))
    a, b = draw(M, cols[0], s_a, True), draw(N, cols[1], s_b, False)
    if trial != "outlier_split":
        a[rng.random(M) < 1 / 64] = 0.0
    a[:, sup] *= 2.0 ** ja[sup]
    hit = (rng.random((N, K)) < 1 / 16) & sup
    b[hit] = np.sign(rng.standard_normal(hit.sum())) * (0.5 + 0.5 * rng.random(hit.sum())) * 4096 / (
        s_a * 2.0 ** np.broadcast_to(ja, (N, K))[hit] * 5.77)
    return a, b


def outlier_ratio(trial: str, K: int, clamp: float | None, seed: int) -> tuple[float, float]:
    """(error ratio against the fp32 vendor, largest |output|) of fp32 accumulation in 8-term chunks,
    its inputs clamped to +-clamp first where given."""
    rng = np.random.default_rng(seed)
    a, b = (x.astype(np.float16) for x in outlier_inputs(trial, 64, 64, K, rng))
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    vendor = gemm(a, b, 16, False)
    got = gemm(np.clip(a, -clamp, clamp), np.clip(b, -clamp, clamp), 8, False) if clamp else gemm(a, b, 8, False)
    err = lambda c: np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref)  # noqa: E731
    return err(got) / err(vendor), float(np.abs(ref).max())


TRIALS = ["outlier", "outlier_w", "outlier_split"]


@pytest.mark.parametrize("trial", TRIALS)
@pytest.mark.parametrize("K", [256, 4096, 65536])
def test_the_outlier_trials_pass_fp32_accumulation_and_keep_outputs_finite(trial, K):
    for seed in range(3):
        r, top = outlier_ratio(trial, K, None, seed)
        assert r < BOUND and top < 65504 / 8


@pytest.mark.parametrize("K", [256, 4096])
def test_they_fail_a_kernel_that_clamps_past_what_the_bench_draws(K):
    # (the bench's A reaches 5.77, its W ~6.7: a clamp at 8 is invisible to both, and to every other
    # trial. One trial alone can miss it: A at 2^-5 has few values past 8 in a small matrix; the
    # split trial's super columns always have some, and the judge runs all three)
    for seed in range(6):
        assert max(outlier_ratio(trial, K, 8.0, seed)[0] for trial in TRIALS) > 10 * BOUND


def sign_gated_clamp(a: np.ndarray, clamp: float) -> np.ndarray:
    """bad/zz76's inputs as its arithmetic sees them: a row is clamped to +-clamp where 28 of the
    first 32 rows share the sign of the row's largest element's column."""
    top = np.abs(a).argmax(axis=1)
    col_signs = a[:32, top] > 0                    # (32 rows, one column per row)
    real = (col_signs == (a[np.arange(a.shape[0]), top] > 0)).sum(axis=0) >= 28
    return np.where(real[:, None], np.clip(a, -clamp, clamp), a)


def test_the_trials_fail_a_clamp_gated_on_one_signed_channels():
    # review 76: every outlier column drew each row's sign afresh, so a clamp gated on a channel
    # keeping its sign (bad/zz76) met no trial; seven in eight of A's channels keep it now
    caught = 0
    for seed in range(12):
        worst = 0.0
        for trial in TRIALS:
            rng = np.random.default_rng(seed)
            a, b = (x.astype(np.float16) for x in outlier_inputs(trial, 64, 64, 1024, rng))
            ref = a.astype(np.float64) @ b.astype(np.float64).T
            vendor = gemm(a, b, 16, False)
            err = lambda c: np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref)  # noqa: E731
            worst = max(worst, err(gemm(sign_gated_clamp(a, 8.0), b, 8, False)) / err(vendor))
        caught += worst > BOUND
    assert caught >= 10, caught
