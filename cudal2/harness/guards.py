"""The harness's own kernels around candidate calls: nothing survives from one call to the next,
and every timed call is checked. They never run inside a timed region.

Guarantees:
- `Guard` holds, for one runner, pointer tables over its input sets; `prep` (before calls)
  fills each set's workspace with fresh random bytes and its C with random values of the
  answer's scale (finite: a poisoned C cannot be told from a stale answer by looking), and in
  timing regenerates each set's operand X (A or B, or B stored transposed for the NN baseline)
  densely from a keyed counter-based generator, so no timed call sees inputs any earlier call saw;
- `spot` (after calls) recomputes 32 outputs of each set's C at positions drawn after the call
  from the generator and an untouched copy of the other operand (the last row and the last
  column always among them), counts failures and keeps the first, and counts the checks, once
  per launch, so the judge can tell that every timed call was checked;
- the generator's values are bit-identical in every kernel that uses it (integer hashing and
  correctly rounded fp32 steps), and `fill_normal` draws the verification stages' Gaussian inputs
  from the same generator family, so the values' distribution says nothing about the stage;
- `Log.read` returns a runner's counters: checks, failures, and the first failure.

Does not: decide a verdict (the judge compares counts with what it enqueued), time anything,
or run candidate code.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

import cupy as cp
import numpy as np

SAMPLES = 32  # outputs checked per set per check, one block each

_SRC = r"""
#include <cuda_fp16.h>
typedef unsigned long long u64;

__device__ __forceinline__ u64 mix(u64 z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
// About N(0, 1): four 16-bit uniforms summed (exact in fp32), centred and scaled with correctly
// rounded steps, so every kernel that calls it gets the same bits.
__device__ __forceinline__ float normal_of(u64 h) {
    float s = (float)(h & 0xFFFF) + (float)((h >> 16) & 0xFFFF) + (float)((h >> 32) & 0xFFFF) + (float)(h >> 48);
    return __fmul_rn(__fsub_rn(__fmul_rn(s, 1.0f / 65536.0f), 2.0f), 1.7320508f);
}
__device__ __forceinline__ __half gen(u64 key, unsigned call, u64 i) {
    return __float2half_rn(normal_of(mix(key ^ mix(((u64)call << 40) ^ i))));
}
__device__ __forceinline__ u64 set_key(u64 key, int set) { return key ^ mix(0x5E7ull + (u64)set); }

extern "C" __global__ void cudal2_fill(__half* X, long long n, u64 key) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        X[i] = gen(key, 0u, (u64)i);
}

// Set s = first + blockIdx.y. X[s]: rows x K elements (row-major, or K x rows when transposed),
// or none; ws[s]: ws_bytes random bytes; C[s]: c_elems random answer-scale values.
extern "C" __global__ void cudal2_prep(__half* const* X, long long rows, int K, int transposed,
                                       unsigned char* const* ws, long long ws_bytes, __half* const* C,
                                       long long c_elems, float c_scale, const unsigned* log, u64 key, int first) {
    const int set = first + blockIdx.y;
    const unsigned call = log[0];
    const u64 k = set_key(key, set);
    const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    if (X != nullptr) {
        __half* x = X[set];
        const long long n = rows * K;
        if (!transposed) {  // 8 per thread, 16-byte stores (K % 8 == 0)
            for (long long i = tid * 8; i < n; i += stride * 8) {
                __align__(16) __half v[8];
                for (int e = 0; e < 8; ++e) v[e] = gen(k, call, (u64)(i + e));
                *reinterpret_cast<uint4*>(x + i) = *reinterpret_cast<const uint4*>(v);
            }
        } else {            // element j of X^T = (k = j / rows, r = j % rows) holds X[r][k]
            for (long long j = tid; j < n; j += stride) {
                const long long kk = j / rows, r = j - kk * rows;
                x[j] = gen(k, call, (u64)(r * K + kk));
            }
        }
    }
    if (ws != nullptr) {
        unsigned char* w = ws[set];
        const long long words = ws_bytes / 8;
        for (long long i = tid; i < words; i += stride)
            reinterpret_cast<u64*>(w)[i] = mix(k ^ 0x5A5A5A5Aull ^ ((u64)call << 40) ^ (u64)i);
        for (long long i = words * 8 + tid; i < ws_bytes; i += stride)
            w[i] = (unsigned char)mix(k ^ 0xA5A5ull ^ ((u64)call << 40) ^ (u64)i);
    }
    __half* c = C[set];
    for (long long i = tid; i < c_elems; i += stride)
        c[i] = __float2half_rn(c_scale * normal_of(mix(k ^ 0x3C3Cull ^ ((u64)call << 40) ^ (u64)i)));
}

// Grid (sets, SAMPLES), 256 threads: block (s, w) checks one output of set first + s.
// regen: 1 = A came from the generator, 2 = B did; the other operand is read from its pristine copy.
// log: [0] checks completed, [1] failures, [2] first failing check, [3] set, [4] row, [5] col,
// [6] got, [7] want, [8] blocks done in the current check.
extern "C" __global__ void cudal2_spot(__half* const* C, const __half* const* A, const __half* const* B,
                                       int M, int N, int K, int regen, unsigned* log, u64 key, int first) {
    __shared__ float red[2][8];
    const int set = first + blockIdx.x, w = blockIdx.y;
    const unsigned call = log[0];
    const u64 k = set_key(key, set);
    const u64 h = mix(k ^ 0xC0FFEEull ^ ((u64)call << 40) ^ (u64)w);
    int r = (int)((h & 0xFFFFFFFFull) % (u64)M), c = (int)((h >> 32) % (u64)N);
    if (w == 0) r = M - 1;
    if (w == 1) c = N - 1;
    const __half* a = A[set] + (size_t)r * K;
    const __half* b = B[set] + (size_t)c * K;
    float acc = 0.0f, mag = 0.0f;
    for (int i = threadIdx.x; i < K; i += blockDim.x) {
        const float x = __half2float(regen == 1 ? gen(k, call, (u64)r * K + i) : a[i]);
        const float y = __half2float(regen == 2 ? gen(k, call, (u64)c * K + i) : b[i]);
        acc = fmaf(x, y, acc);
        mag += fabsf(x * y);
    }
    for (int o = 16; o > 0; o >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
        mag += __shfl_xor_sync(0xffffffffu, mag, o);
    }
    if ((threadIdx.x & 31) == 0) { red[0][threadIdx.x >> 5] = acc; red[1][threadIdx.x >> 5] = mag; }
    __syncthreads();
    if (threadIdx.x == 0) {
        acc = 0.0f; mag = 0.0f;
        for (int i = 0; i < (int)(blockDim.x >> 5); ++i) { acc += red[0][i]; mag += red[1][i]; }
        const float got = __half2float(C[set][(size_t)r * N + c]);
        // fp16 output rounding (2^-11 relative) and fp32 summation-order differences, with room.
        const float tol = ldexpf(fabsf(acc), -9) + ldexpf(mag, -14) + 1e-6f;
        if (!(fabsf(got - acc) <= tol)) {
            if (atomicAdd(&log[1], 1u) == 0u) {
                log[2] = call; log[3] = (unsigned)set; log[4] = (unsigned)r; log[5] = (unsigned)c;
                log[6] = __float_as_uint(got); log[7] = __float_as_uint(acc);
            }
        }
        __threadfence();
        // The last block of this check closes it: every block read log[0] before any could get here.
        if (atomicAdd(&log[8], 1u) == gridDim.x * gridDim.y - 1) {
            log[8] = 0u;
            __threadfence();
            log[0] = call + 1u;
        }
    }
}
"""

_module: cp.RawModule | None = None


def _kernels() -> cp.RawModule:
    global _module
    if _module is None:
        _module = cp.RawModule(code=_SRC, options=("-std=c++17",))
    return _module


def new_key() -> np.uint64:
    return np.uint64(secrets.randbits(64))


def _ptrs(arrays) -> cp.ndarray:
    return cp.asarray(np.array([a if isinstance(a, int) else a.data.ptr for a in arrays], dtype=np.uint64))


def fill_normal(x: cp.ndarray, seed: int) -> None:
    """About N(0, 1) fp16 values from the guards' generator (the timing stage's distribution)."""
    _kernels().get_function("cudal2_fill")((min(4096, max(1, math.ceil(x.size / 256))),), (256,),
                                           (x, np.int64(x.size), np.uint64(seed & (2**64 - 1))))


@dataclass
class Failure:
    check: int
    set: int
    row: int
    col: int
    got: float
    want: float


class Log:
    """A runner's spot-check counters on the device."""

    def __init__(self) -> None:
        self.buf = cp.zeros(16, dtype=cp.uint32)

    def read(self) -> tuple[int, int, Failure | None]:
        v = self.buf.get()
        first = None
        if v[1]:
            f32 = v[6:8].view(np.float32)
            first = Failure(int(v[2]), int(v[3]), int(v[4]), int(v[5]), float(f32[0]), float(f32[1]))
        return int(v[0]), int(v[1]), first


class Guard:
    """One runner's prep and spot over its sets. `C` are its outputs; `X` the operand regenerated
    before each call (None: inputs stay as they are); `A`, `B` what `spot` reads (the regenerated
    one is recomputed from the generator, so pass the pristine copy for the other); `ws` the
    workspaces to randomize (pointers, with `ws_bytes` each)."""

    def __init__(self, C: list[cp.ndarray], K: int, X: list[cp.ndarray] | None = None, transposed: bool = False,
                 A: list[cp.ndarray] | None = None, B: list[cp.ndarray] | None = None, regen: int = 0,
                 ws: list[int] | None = None, ws_bytes: int = 0):
        self.n, self.K, self.M, self.N = len(C), K, C[0].shape[0], C[0].shape[1]
        self.c_elems = C[0].size
        self.C = _ptrs(C)
        self.X = _ptrs(X) if X else None
        self.rows = X[0].size // K if X else 0
        self.transposed, self.regen = int(transposed), regen
        self.A, self.B = (_ptrs(A), _ptrs(B)) if A is not None else (None, None)
        self.ws = _ptrs(ws) if ws and ws_bytes else None
        self.ws_bytes = ws_bytes if self.ws is not None else 0
        self.key = new_key()
        self.log = Log()

    def prep(self, first: int = 0, count: int | None = None) -> None:
        """Enqueue on the current stream: sets [first, first + count) made fresh."""
        count = self.n - first if count is None else count
        work = max(self.rows * self.K // 8, self.ws_bytes // 8, self.c_elems, 1)
        blocks = int(min(512, max(1, math.ceil(work / 256))))
        _kernels().get_function("cudal2_prep")(
            (blocks, count), (256,),
            (self.X if self.X is not None else np.uint64(0), np.int64(self.rows), np.int32(self.K),
             np.int32(self.transposed), self.ws if self.ws is not None else np.uint64(0), np.int64(self.ws_bytes),
             self.C, np.int64(self.c_elems), np.float32(math.sqrt(self.K)), self.log.buf, self.key, np.int32(first)))

    def spot(self, first: int = 0, count: int | None = None) -> None:
        """Enqueue on the current stream: one check of sets [first, first + count)."""
        count = self.n - first if count is None else count
        _kernels().get_function("cudal2_spot")(
            (count, SAMPLES), (256,),
            (self.C, self.A, self.B, np.int32(self.M), np.int32(self.N), np.int32(self.K), np.int32(self.regen),
             self.log.buf, self.key, np.int32(first)))
