"""The harness's own kernels around every candidate call: nothing survives from one call to the
next, and every timed call is checked.

Guarantees:
- `prep` (before a call) fills the workspace with fresh random bytes and C with random values of
  the answer's scale (finite: a poisoned C cannot be told from a stale answer by looking), and
  in timing regenerates the chosen operand X (A or B, or B stored transposed for the NN
  baseline) densely from a keyed counter-based generator, so no two timed calls see the same
  inputs: a memoized or incrementally updated answer is wrong;
- `spot` (after a call) recomputes 32 outputs at positions drawn after the call from the same
  generator and an untouched copy of the other operand (the last row and the last column always
  among them), counts failures and keeps the first, and counts the calls it checked;
- the generator's values are bit-identical in `prep` and `spot` (integer hashing and
  correctly-rounded fp32 steps, no contraction), so an honest kernel never fails a spot check
  for a reason other than its own error;
- `Log` reads a runner's counters back: calls checked, failures, and the first failure.

Does not: decide a verdict (the judge compares the counts with the calls it enqueued), or run
any candidate code.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

import cupy as cp
import numpy as np

SAMPLES = 32  # one warp each, one block

_SRC = r"""
#include <cuda_fp16.h>
typedef unsigned long long u64;

__device__ __forceinline__ u64 mix(u64 z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
// N(0, 1) by Box-Muller from one 64-bit hash, with every step correctly rounded or a fixed library
// routine, so every kernel that calls it gets the same bits; unbounded tails like the verification
// stages' Gaussian inputs, so the values say nothing about which stage a call is in.
__device__ __forceinline__ float normal_of(u64 h) {
    const float u1 = __fmul_rn((float)((h >> 40) + 1ull), 1.0f / 16777216.0f);   // (0, 1]
    const float u2 = __fmul_rn((float)(h & 0xFFFFFFull), 1.0f / 16777216.0f);    // [0, 1)
    return __fmul_rn(__fsqrt_rn(__fmul_rn(-2.0f, logf(u1))), cospif(__fmul_rn(2.0f, u2)));
}
__device__ __forceinline__ __half gen(u64 key, unsigned call, u64 i) {
    return __float2half_rn(normal_of(mix(key ^ mix(((u64)call << 40) ^ i))));
}

// X: rows x K elements (row-major, or K x rows when transposed). ws: random bytes. C: random values.
extern "C" __global__ void cudal2_prep(__half* X, long long rows, int K, int transposed, unsigned char* ws,
                                       long long ws_bytes, __half* C, long long c_elems, float c_scale,
                                       const unsigned* log, u64 key) {
    const unsigned call = log[0];
    const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    if (X != nullptr) {
        const long long n = rows * K;
        if (!transposed) {  // 8 per thread, 16-byte stores (K % 8 == 0)
            for (long long i = tid * 8; i < n; i += stride * 8) {
                __align__(16) __half v[8];
                for (int e = 0; e < 8; ++e) v[e] = gen(key, call, (u64)(i + e));
                *reinterpret_cast<uint4*>(X + i) = *reinterpret_cast<const uint4*>(v);
            }
        } else {            // element j of X^T = (k = j / rows, r = j % rows) holds X[r][k]
            for (long long j = tid; j < n; j += stride) {
                const long long k = j / rows, r = j - k * rows;
                X[j] = gen(key, call, (u64)(r * K + k));
            }
        }
    }
    const long long words = ws_bytes / 8;
    for (long long i = tid; i < words; i += stride)
        reinterpret_cast<u64*>(ws)[i] = mix(key ^ 0x5A5A5A5Aull ^ ((u64)call << 40) ^ (u64)i);
    for (long long i = words * 8 + tid; i < ws_bytes; i += stride)
        ws[i] = (unsigned char)mix(key ^ 0xA5A5ull ^ ((u64)call << 40) ^ (u64)i);
    for (long long i = tid; i < c_elems; i += stride)
        C[i] = __float2half_rn(c_scale * normal_of(mix(key ^ 0x3C3Cull ^ ((u64)call << 40) ^ (u64)i)));
}

// One block of SAMPLES warps. regen: 1 = A came from gen, 2 = B came from gen, 0 = neither.
// log: [0] calls checked, [1] failures, [2] first failing call, [3] row, [4] col, [5] got, [6] want.
extern "C" __global__ void cudal2_spot(const __half* C, const __half* A, const __half* B, int M, int N, int K,
                                       int regen, unsigned* log, u64 key) {
    const unsigned call = log[0];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u64 h = mix(key ^ 0xC0FFEEull ^ ((u64)call << 40) ^ (u64)w);
    int r = (int)((h & 0xFFFFFFFFull) % (u64)M), c = (int)((h >> 32) % (u64)N);
    if (w == 0) r = M - 1;
    if (w == 1) c = N - 1;
    float acc = 0.0f, mag = 0.0f;
    for (int k = lane; k < K; k += 32) {
        const float a = __half2float(regen == 1 ? gen(key, call, (u64)r * K + k) : A[(size_t)r * K + k]);
        const float b = __half2float(regen == 2 ? gen(key, call, (u64)c * K + k) : B[(size_t)c * K + k]);
        acc = fmaf(a, b, acc);
        mag += fabsf(a * b);
    }
    for (int o = 16; o > 0; o >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
        mag += __shfl_xor_sync(0xffffffffu, mag, o);
    }
    if (lane == 0) {
        const float got = __half2float(C[(size_t)r * N + c]);
        // fp16 output rounding (2^-11 relative) and fp32 summation-order differences, with room.
        const float tol = ldexpf(fabsf(acc), -9) + ldexpf(mag, -14) + 1e-6f;
        if (!(fabsf(got - acc) <= tol)) {
            if (atomicAdd(&log[1], 1u) == 0u) {
                log[2] = call; log[3] = (unsigned)r; log[4] = (unsigned)c;
                log[5] = __float_as_uint(got); log[6] = __float_as_uint(acc);
            }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) log[0] = call + 1;
}
"""

_module: cp.RawModule | None = None


def _kernels() -> cp.RawModule:
    global _module
    if _module is None:
        _module = cp.RawModule(code=_SRC, options=("-std=c++17",))
    return _module


@dataclass
class Failure:
    call: int
    row: int
    col: int
    got: float
    want: float


def new_key() -> np.uint64:
    return np.uint64(secrets.randbits(64))


class Log:
    """One runner's spot-check counters on the device, and its generator key."""

    def __init__(self) -> None:
        self.buf = cp.zeros(8, dtype=cp.uint32)
        self.key = new_key()

    def read(self) -> tuple[int, int, Failure | None]:
        v = self.buf.get()
        first = None
        if v[1]:
            f32 = v[5:7].view(np.float32)
            first = Failure(int(v[2]), int(v[3]), int(v[4]), float(f32[0]), float(f32[1]))
        return int(v[0]), int(v[1]), first


def prep(stream: cp.cuda.Stream, log: Log, ws: int, ws_bytes: int, C: cp.ndarray, K: int,
         X: cp.ndarray | None = None, transposed: bool = False) -> None:
    """Enqueue: workspace <- random bytes, C <- random answer-scale values, X <- fresh generator values."""
    rows = (X.size // K) if X is not None else 0
    work = max(rows * K // 8, ws_bytes // 8, C.size, 1)
    blocks = int(min(1024, max(1, math.ceil(work / 256))))
    args = (X if X is not None else np.uint64(0), np.int64(rows), np.int32(K), np.int32(transposed),
            np.uint64(ws), np.int64(ws_bytes), C, np.int64(C.size), np.float32(math.sqrt(K)), log.buf, log.key)
    with stream:
        _kernels().get_function("cudal2_prep")((blocks,), (256,), args)


def spot(stream: cp.cuda.Stream, log: Log, C: cp.ndarray, A: cp.ndarray, B: cp.ndarray, regen: int) -> None:
    """Enqueue: check SAMPLES outputs of C against A·Bᵀ (A or B from the generator when `regen` says so)."""
    M, N = C.shape
    K = A.shape[1] if A.ndim == 2 else B.shape[1]
    with stream:
        _kernels().get_function("cudal2_spot")((1,), (32 * SAMPLES,),
                                               (C, A, B, np.int32(M), np.int32(N), np.int32(K), np.int32(regen),
                                                log.buf, log.key))
