"""Device buffers for judging: guarded allocations and fresh random inputs.

Guarantees: every `Guarded` buffer sits between two guard regions of random bytes (new per
buffer, so a kernel cannot tell a guarded verification buffer from a timing set by the bytes
around it), starts 256-byte aligned, and reports whether its guards are intact; `fill` draws
new values from a seed the kernel cannot predict (fresh per trial), and never zeros. (What C and
the workspace hold before a call is written by `guards.prep`.)

Does not: synchronize. Everything is enqueued on the current cupy stream.
"""

from __future__ import annotations

import secrets

import cupy as cp


def random_bytes(n: int, seed: int | None = None) -> cp.ndarray:
    """`n` random bytes on the device: the same for the same `seed`, fresh without one."""
    rng = cp.random.default_rng(secrets.randbits(63) if seed is None else seed)
    return rng.integers(0, 256, size=n, dtype=cp.uint8)


class Guarded:
    """`nbytes` between two guards of `guard` bytes (rounded up to 256), each filled from a seed
    kept on the host: `intact` regenerates them, so no copy exists where a kernel could reach."""

    def __init__(self, nbytes: int, guard: int):
        guard = (guard + 255) // 256 * 256
        self.nbytes, self.guard = nbytes, guard
        self.raw = cp.empty(nbytes + 2 * guard, dtype=cp.uint8)
        self.seeds = (new_seed(), new_seed())
        for region, seed in zip(self._guards(), self.seeds):
            region[...] = random_bytes(region.size, seed)

    def _guards(self) -> tuple[cp.ndarray, cp.ndarray]:
        # Bytes, not fp16: the second guard starts wherever the data ends (any byte count).
        return self.raw[:self.guard], self.raw[self.guard + self.nbytes:]

    @property
    def ptr(self) -> int:
        return self.raw.data.ptr + self.guard

    def view(self, dtype, shape) -> cp.ndarray:
        return self.raw[self.guard:self.guard + self.nbytes].view(dtype).reshape(shape)

    def intact(self) -> bool:
        return all(bool((region == random_bytes(region.size, seed)).all())
                   for region, seed in zip(self._guards(), self.seeds))


def new_seed() -> int:
    return secrets.randbits(63)


def fill(x: cp.ndarray, dist: str, seed: int) -> None:
    """Fill an fp16 matrix in place: 'pm1' draws from {-1, 0, 1} (the exact stage); every other
    `dist` is a mode of the guards' generator (`guards.MODES`: 'normal', 'uniform' (positive-mean:
    partial sums grow with K, which exposes fp16 accumulation), 'positive', 'signed'), the same
    values the timing stage draws. A 'positive' A times a 'signed' B is the cancelling trial: long
    same-sign runs make large partial sums while the whole dot product stays small, so rounding
    partial sums to fp16 shows at many times the output's own rounding."""
    if dist == "pm1":
        x[...] = cp.random.default_rng(seed).integers(-1, 2, size=x.shape, dtype=cp.int32).astype(cp.float16)
        return
    from cudal2.harness.guards import fill as generate
    generate(x, seed, dist)


def matches(x: cp.ndarray, dist: str, seed: int) -> bool:
    """`x` holds, bit for bit, what `fill(x, dist, seed)` writes (regenerated now: the check needs
    no stored copy)."""
    want = cp.empty_like(x)
    fill(want, dist, seed)
    return bool((x.view(cp.uint16) == want.view(cp.uint16)).all())
