"""Device buffers for judging: guarded allocations, fresh random inputs, NaN poison.

Guarantees: every `Guarded` buffer sits between two canary regions filled with a fixed byte
pattern, starts 256-byte aligned, and reports whether its canaries are intact; `fill` draws
new values from a seed the kernel cannot predict (fresh per trial), and never zeros; `poison`
writes fp16 NaN into every element, so an element a kernel did not write cannot pass.

Does not: synchronize. Everything is enqueued on the current cupy stream.
"""

from __future__ import annotations

import secrets

import cupy as cp

CANARY = 0xA5
NAN16 = 0x7E00  # a quiet fp16 NaN


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


def fill(x: cp.ndarray, dist: str, seed: int) -> None:
    """Fill an fp16 array in place: 'pm1' draws from {-1, 0, 1}, 'normal' N(0, 1), 'uniform' U(0, 1)
    (positive-mean: partial sums grow with K, which is what exposes fp16 accumulation)."""
    rng = cp.random.default_rng(seed)
    if dist == "pm1":
        v = rng.integers(-1, 2, size=x.shape, dtype=cp.int32)
    elif dist == "normal":
        v = rng.standard_normal(size=x.shape, dtype=cp.float32)
    elif dist == "uniform":
        v = rng.random(size=x.shape, dtype=cp.float32)
    else:
        raise ValueError(f"unknown distribution {dist!r}")
    x[...] = v.astype(cp.float16)


def poison(x: cp.ndarray) -> None:
    x.view(cp.uint16).fill(NAN16)


def garbage(raw: cp.ndarray) -> None:
    """Workspace contents a kernel must not rely on (all ones: NaN as fp16/fp32, -1 as ints)."""
    raw.fill(0xFF)
