"""A write of each A right before its call, on the call's stream, with values nobody could know
before: the product bench's answer to reading ahead through its pool (review 58).

Why: the bench's pool of A tensors held its final contents before a round's first call, so a
kernel could compute the next calls' outputs in one pass over B at memory-bound shapes, keep
them, and hand each back right when its call came (bad/zz58_pool_read_ahead: every check
passed). In a model, too, the op before a linear writes its input right before it.

Guarantees:
- `Stamp(ptrs, elems, stream)` covers a pool of equal fp16 tensors (their device addresses, their
  elements). `write(j)` enqueues, on `stream()`'s stream (a graph's capture stream during a
  capture: the write becomes a node, and each replay writes anew), one small kernel that fills
  pool tensor j with about-N(0, 1) values (the judge's generator, `guards.GEN_SRC`) under keys
  that each block draws when it runs: the keyed PRF of its last key over %globaltimer and
  %clock64 read then. No value exists anywhere before the write runs, so an output computed
  earlier from that memory is stale. Each block logs its key (one small device array per pool
  tensor, made before any capture).
- `matches(j)` regenerates tensor j from its logged keys with the same kernel, bit for bit, and
  compares (reads back: syncs `stream()`).
- nothing is allocated or compiled by `write` (all at construction), so it can be captured.

Does not: stop a kernel from reading the log (the next key needs the clocks of a launch that
has not run), or time anything; it costs both sides of a pair the same small kernel a call
(the bench stamps only where reading ahead pays: `STAMP_MAX_M`).
"""

from __future__ import annotations

import ctypes
import math
import secrets
from typing import Callable, Sequence

BLOCK = 256
MAX_BLOCKS = 128            # keys logged per tensor; a block's share of A is contiguous
PER_BLOCK = 8 * BLOCK       # elements a block takes before the grid grows
# Above this M a call is compute-bound on an H100 (ridge ~300 FLOP per byte of B; a call does 2M
# FLOPs per B element read): two calls' outputs in one pass over B cost about two calls, so
# reading ahead gains nothing, and a write of a large A would only dilute both sides' times.
STAMP_MAX_M = 512

_SRC = r"""
extern "C" __global__ void cudal2_stamp(__half* X, long long n, u64* keys, int again) {
    __shared__ u64 key;
    if (threadIdx.x == 0) {
        u64 k = keys[blockIdx.x];
        if (!again) {   // drawn now, from clocks no earlier launch could read: the values did not exist before
            u64 t;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
            k = prf(k, t ^ ((u64)clock64() << 21) ^ ((u64)blockIdx.x << 56));
            keys[blockIdx.x] = k;
        }
        key = k;
    }
    __syncthreads();
    const long long chunk = (n + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * chunk;
    const long long hi = lo + chunk < n ? lo + chunk : n;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x)
        X[i] = gen(key, 0u, (u64)i, 0, 1, 1);
}
"""


def blocks(elems: int) -> int:
    return max(1, min(MAX_BLOCKS, math.ceil(elems / PER_BLOCK)))


def source() -> str:
    from cudal2.harness.guards import GEN_SRC
    return GEN_SRC + _SRC


class Stamp:
    def __init__(self, ptrs: Sequence[int], elems: int, stream: Callable[[], int]):
        import cupy as cp
        import numpy as np

        from cudal2.harness import driver, rawkernels
        self.cp, self.ptrs, self.elems, self.stream = cp, list(ptrs), elems, stream
        self.grid = blocks(elems)
        self.keys = cp.asarray(np.frombuffer(secrets.token_bytes(8 * MAX_BLOCKS * len(self.ptrs)), dtype=np.uint64)
                               .reshape(len(self.ptrs), MAX_BLOCKS))
        self.fn = ctypes.c_void_p(rawkernels.function(source(), "cudal2_stamp").kernel.ptr)
        self.cu = driver.lib()
        self.cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [
            ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.args = [self._args(p, self.keys[j].data.ptr, 0) for j, p in enumerate(self.ptrs)]
        self.scratch = cp.empty(elems, dtype=cp.float16)
        self.again = [self._args(self.scratch.data.ptr, self.keys[j].data.ptr, 1) for j in range(len(self.ptrs))]

    def _args(self, ptr: int, keys: int, again: int):
        vals = (ctypes.c_void_p(ptr), ctypes.c_longlong(self.elems), ctypes.c_void_p(keys), ctypes.c_int(again))
        return vals, (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in vals])

    def _launch(self, args, stream: int) -> None:
        from cudal2.harness import driver
        driver.check(self.cu.cuLaunchKernel(self.fn, self.grid, 1, 1, BLOCK, 1, 1, 0, ctypes.c_void_p(stream),
                                            args[1], None), "cuLaunchKernel(cudal2_stamp)")

    def write(self, j: int) -> None:
        self._launch(self.args[j], self.stream())

    def matches(self, j: int) -> bool:
        cp, s = self.cp, self.stream()
        self._launch(self.again[j], s)
        with cp.cuda.ExternalStream(s):
            mem = cp.cuda.UnownedMemory(self.ptrs[j], 2 * self.elems, self)
            got = cp.ndarray((self.elems,), cp.uint16, cp.cuda.MemoryPointer(mem, 0))
            return bool((got == self.scratch.view(cp.uint16)).all())
