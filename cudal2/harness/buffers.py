"""Device buffers for judging: every buffer a candidate can address lives in an arena, and fresh
random inputs.

Guarantees:
- an `Arena` is one allocation of whole 2 MiB pages (its own cudaMalloc, outside cupy's pool, so
  no page of it is shared with other memory) holding its buffers in a random order, each at a
  random 256-byte-aligned offset behind a random gap; every byte that belongs to no buffer (the
  gaps, the tail, the slack after a buffer of any size) is background: per-word outputs of the
  keyed PRF (`guards.PRF_SRC`) under a seed kept on the host, so no background word gives away
  the seed (a kernel cannot rewrite the background and restore it). `damage` regenerates the
  background and counts the bytes that changed, so a write outside the buffers, anywhere in the
  arena, is found whenever it is checked, and no copy of what the background should be exists
  where a kernel could reach. Verification buffers and timing sets are laid out by the same rule
  (but not in the same number: the span of a call's own pointers can tell the stages apart, so
  the judge checks timing as it checks verification);
- `fill` draws new values from a seed the kernel cannot predict (fresh per trial), never zeros,
  and `matches` checks a matrix against its seed by regenerating it.
- `pad_address_space` (the worker calls it first) moves a process's later allocations by a random
  number of 2 MiB pages, so no operand sits at a repeatable distance from the parameter bank.

- `randomize` overwrites a buffer of the harness's own with fresh random bytes (the judge does so
  to its cuBLAS and cuBLASLt workspaces and the server hold's pinned block before every candidate
  call, and snapshots to their rows before every replay: memory a kernel can reach that no check
  reads back).

Does not: protect memory outside its arenas (the harness's own small tables, the driver's) or
synchronize, except `damage`, which reads its count back. What C and the workspace hold before a
call is written by `guards.prep`.
"""

from __future__ import annotations

import random
import secrets
from typing import Sequence

import cupy as cp
import numpy as np

from cudal2.harness import rawkernels
from cudal2.harness.guards import PRF_SRC

PAGE = 2 << 20  # the driver maps device memory in 2 MiB pages
ALIGN = 256
PAD_PAGES = 512  # pad_address_space: up to 1 GiB

_pad: tuple[list[int], int] | None = None   # (pointers, bytes): kept for the process's life


def pad_address_space() -> int:
    """Allocate, once per process and before the judge's own device memory, a random number of
    single pages (0 to PAD_PAGES - 1, each its own cudaMalloc: one large block lands in another
    part of the address space and moves nothing) and keep them; returns the pad's size in bytes.
    The parameter bank (%gridid below it) sits at a distance from a process's first allocations
    that repeats across processes (eval/window_probe.py: one of two values in 6), so a kernel
    could add a constant to an operand's address to reach it; the pad moves the later
    allocations by a random number of pages."""
    global _pad
    if _pad is None:
        n = secrets.randbelow(PAD_PAGES)
        _pad = ([cp.cuda.runtime.malloc(PAGE) for _ in range(n)], n * PAGE)
    return _pad[1]

_SRC = PRF_SRC + r"""
extern "C" __global__ void cudal2_background(u64* w, long long words, u64 seed) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x)
        w[i] = prf(seed, (u64)i);
}
// Bytes of the background (outside every region [start, end), sorted; starts 8-byte aligned) that
// differ from their hash: out[0] += count, out[1] = min(first offset).
extern "C" __global__ void cudal2_background_check(const u64* w, long long words, u64 seed, const long long* start,
                                                   const long long* end, int regions, u64* out) {
    u64 bad = 0, first = ~0ull;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x) {
        const u64 d = w[i] ^ prf(seed, (u64)i);
        if (!d) continue;
        const long long b0 = i * 8;
        int lo = 0, hi = regions;            // the last region starting at or before b0
        while (lo < hi) { const int m = (lo + hi) >> 1; if (start[m] <= b0) lo = m + 1; else hi = m; }
        const long long data_end = lo > 0 ? end[lo - 1] : 0;
        for (int b = 0; b < 8; ++b)
            if (b0 + b >= data_end && ((d >> (8 * b)) & 0xFF)) { ++bad; if ((u64)(b0 + b) < first) first = b0 + b; }
    }
    if (bad) { atomicAdd(&out[0], bad); atomicMax(&out[1], ~first); }   // out[1]: ~(first offset), 0 for none
}
"""
def _blocks(words: int) -> int:
    return int(min(4096, max(1, -(-words // 256))))


class Arena:
    """Buffers of `sizes` bytes (region i is `sizes[i]`), placed in a random order with a random
    gap of [gap, 2 gap) bytes before each and after the last."""

    def __init__(self, sizes: Sequence[int], gap: int):
        rng = random.SystemRandom()
        order = list(range(len(sizes)))
        rng.shuffle(order)
        self.offsets = [0] * len(sizes)
        self.sizes = [int(s) for s in sizes]
        pos = 0
        for i in order:
            pos = -(-(pos + rng.randrange(gap, 2 * gap)) // ALIGN) * ALIGN
            self.offsets[i] = pos
            pos += self.sizes[i]
        self.nbytes = -(-(pos + rng.randrange(gap, 2 * gap)) // PAGE) * PAGE
        self._mem = cp.cuda.Memory(self.nbytes)
        self.raw = cp.ndarray((self.nbytes,), cp.uint8, cp.cuda.MemoryPointer(self._mem, 0))
        self.seed = secrets.randbits(64)
        bounds = sorted((self.offsets[i], self.offsets[i] + self.sizes[i]) for i in order)
        self._start = cp.asarray(np.array([b[0] for b in bounds], dtype=np.int64))
        self._end = cp.asarray(np.array([b[1] for b in bounds], dtype=np.int64))
        words = self.nbytes // 8
        rawkernels.function(_SRC, "cudal2_background")((_blocks(words),), (256,),
                                                     (self.raw, np.int64(words), np.uint64(self.seed)))

    def ptr(self, i: int) -> int:
        return self.raw.data.ptr + self.offsets[i]

    def view(self, i: int, dtype, shape) -> cp.ndarray:
        o = self.offsets[i]
        return self.raw[o:o + self.sizes[i]].view(dtype).reshape(shape)

    def damage(self) -> tuple[int, int]:
        """(bytes of the background that changed, offset of the first, or -1); reads back (syncs)."""
        out = cp.zeros(2, dtype=cp.uint64)   # a memset, not a copy from the host
        words = self.nbytes // 8
        rawkernels.function(_SRC, "cudal2_background_check")(
            (_blocks(words),), (256,), (self.raw, np.int64(words), np.uint64(self.seed), self._start, self._end,
                                        np.int32(len(self.sizes)), out))
        bad, inv = (int(v) for v in out.get())
        return bad, ((~inv) & (2**64 - 1) if bad else -1)

    def where(self, offset: int) -> tuple[int, int]:
        """(the region whose end lies last before `offset`, or -1; bytes past that end)."""
        before = [(offset - (o + s), i) for i, (o, s) in enumerate(zip(self.offsets, self.sizes)) if o + s <= offset]
        return (min(before)[1], min(before)[0]) if before else (-1, offset)


def randomize(x: cp.ndarray) -> None:
    """Enqueue: every byte of `x` (contiguous, a multiple of 8 bytes) overwritten with keyed PRF
    output under a fresh seed, so nothing a kernel stored there survives to a later call."""
    randomize_at(x.data.ptr, x.nbytes)


def randomize_at(ptr: int, nbytes: int) -> None:
    """`randomize` of `nbytes` (a multiple of 8) at a device-accessible address (pinned host memory
    too, through its unified address)."""
    words = nbytes // 8
    rawkernels.function(_SRC, "cudal2_background")((_blocks(words),), (256,),
                                                 (np.uint64(ptr), np.int64(words), np.uint64(secrets.randbits(64))))


def new_seed() -> int:
    return secrets.randbits(63)


def fill(x: cp.ndarray, dist: str, seed: int) -> None:
    """Fill an fp16 matrix in place: 'pm1' draws from {-1, 0, 1} (the exact stage); every other
    `dist` is a mode of the guards' generator (`guards.MODES`: 'normal', 'uniform' (positive-mean:
    partial sums grow with K, which exposes fp16 accumulation), 'positive', 'signed'), the values
    the timing stage draws ('normal' both). A 'positive' A times a 'signed' B is the cancelling trial: long
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
