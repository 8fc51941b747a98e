"""Device buffers for judging: guarded allocations and fresh random inputs.

Guarantees: every `Guarded` buffer sits between two canary regions filled with a fixed byte
pattern, starts 256-byte aligned, and reports whether its canaries are intact; `fill` draws
new values from a seed the kernel cannot predict (fresh per trial), and never zeros. (What C and
the workspace hold before a call is written by `guards.prep`.)

Does not: synchronize. Everything is enqueued on the current cupy stream.
"""

from __future__ import annotations

import secrets

import cupy as cp

CANARY = 0xA5


class Guarded:
    def __init__(self, nbytes: int, guard: int):
        guard = (guard + 255) // 256 * 256
        self.nbytes, self.guard = nbytes, guard
        self.raw = cp.empty(nbytes + 2 * guard, dtype=cp.uint8)
        self.raw[:guard].fill(CANARY)
        self.raw[guard + nbytes:].fill(CANARY)

    @property
    def ptr(self) -> int:
        return self.raw.data.ptr + self.guard

    def view(self, dtype, shape) -> cp.ndarray:
        return self.raw[self.guard:self.guard + self.nbytes].view(dtype).reshape(shape)

    def intact(self) -> bool:
        g = self.guard
        return bool((self.raw[:g] == CANARY).all()) and bool((self.raw[g + self.nbytes:] == CANARY).all())


def new_seed() -> int:
    return secrets.randbits(63)


SIGN_BLOCK = 128  # 'alternating' flips sign every this many columns (k), or every K/2 for small K


def sign_block(K: int) -> int:
    """Runs of one sign: 128 columns, or half of a small K (a multiple of 8), so the dot product cancels."""
    return max(8, min(SIGN_BLOCK, K // 2 // 8 * 8))


def fill(x: cp.ndarray, dist: str, seed: int) -> None:
    """Fill an fp16 matrix in place: 'pm1' draws from {-1, 0, 1}, 'normal' N(0, 1), 'uniform' U(0, 1)
    (positive-mean: partial sums grow with K, which is what exposes fp16 accumulation), 'positive'
    U(0.5, 1), and 'alternating' U(0.5, 1) with the sign flipped on every other block of
    `sign_block(K)` columns. A 'positive' A times an 'alternating' B is the cancelling trial: every
    run of up to SIGN_BLOCK consecutive terms sums to a large partial while the whole dot product
    stays small, so rounding partial sums to fp16 shows at many times the output's own rounding."""
    rng = cp.random.default_rng(seed)
    if dist == "pm1":
        v = rng.integers(-1, 2, size=x.shape, dtype=cp.int32)
    elif dist == "normal":  # the timing stage's generator: no statistic of the inputs tells the stages apart
        from cudal2.harness.guards import fill_normal
        fill_normal(x, seed)
        return
    elif dist == "uniform":
        v = rng.random(size=x.shape, dtype=cp.float32)
    elif dist in ("positive", "alternating"):
        v = 0.5 + 0.5 * rng.random(size=x.shape, dtype=cp.float32)
        if dist == "alternating":
            k = cp.arange(x.shape[-1])
            v *= cp.where((k // sign_block(x.shape[-1])) % 2 == 0, 1.0, -1.0).astype(cp.float32)
    else:
        raise ValueError(f"unknown distribution {dist!r}")
    x[...] = v.astype(cp.float16)
