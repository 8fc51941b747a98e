// row-softmax: out[r][c] = exp(x[r][c] - max_r) / sum_c' exp(x[r][c'] - max_r), fp16 [rows, cols] in
//   and out; fp32 statistics and math, one rounding to fp16 per output.
// Technique: one row per 256-thread block, the row held in registers. Each thread loads its
//   16-byte vectors (columns (t + k * 256) * 8) once, up front (two LDG.128 in flight per thread
//   for 4096 columns), so x is read from DRAM exactly once and out written once: 2 passes over
//   registers, 1 over memory. The statistics are the online-softmax pair (running max m, sum of
//   exp(x - m)), folded per vector and merged with rescaling (s * exp(m_old - m_new)) across lanes
//   (__shfl_xor_sync butterfly) and warps (8 pairs in shared memory, combined in a fixed order by
//   every thread): one block reduction instead of two, deterministic. Rows wider than 4096 columns
//   read their extra vectors again from global memory; cols % 8 != 0 takes 2-byte loads.
//   __expf (ex2.approx) costs ~1e-6 relative error, far below fp16's 2^-11.
/* cudal2-launch
{
  "task": "row-softmax",
  "kernels": [
    {"name": "row_softmax", "grid": ["rows"], "block": [256], "args": ["x", "out", "rows", "cols"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

constexpr int T = 256;       // threads: one block per row
constexpr int C = 2;         // 16-byte vectors per thread kept in registers (C * T * 8 = 4096 columns)
constexpr int W = T / 32;

union V8 { uint4 u; __half2 h[4]; };

// The 8 halves at column c of a row (c % 8 == 0, c < cols): one 16-byte load when cols % 8 == 0
// (every row then starts 16-byte aligned), else eight 2-byte loads with `pad` past the end.
__device__ __forceinline__ uint4 load8(const __half* row, int c, int cols, __half pad) {
    if ((cols & 7) == 0) return __ldg(reinterpret_cast<const uint4*>(row + c));
    V8 v;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const int e = c + 2 * k;
        v.h[k] = __halves2half2(e < cols ? row[e] : pad, e + 1 < cols ? row[e + 1] : pad);
    }
    return v.u;
}

__device__ __forceinline__ void unpack(uint4 u, float f[8]) {
    V8 v;
    v.u = u;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const float2 p = __half22float2(v.h[k]);
        f[2 * k] = p.x;
        f[2 * k + 1] = p.y;
    }
}

// Round f to fp16 once and store the columns of [c, c + 8) that exist.
__device__ __forceinline__ void store8(__half* row, int c, int cols, const float f[8]) {
    if ((cols & 7) == 0) {
        V8 v;
#pragma unroll
        for (int k = 0; k < 4; ++k) v.h[k] = __floats2half2_rn(f[2 * k], f[2 * k + 1]);
        *reinterpret_cast<uint4*>(row + c) = v.u;
    } else {
#pragma unroll
        for (int k = 0; k < 8; ++k)
            if (c + k < cols) row[c + k] = __float2half_rn(f[k]);
    }
}

struct MS { float m, s; };   // running max and sum of exp(x - m)

__device__ __forceinline__ MS combine(MS a, MS b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.0f};
    return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

__device__ __forceinline__ MS fold8(MS a, const float f[8]) {
    float vm = f[0];
#pragma unroll
    for (int k = 1; k < 8; ++k) vm = fmaxf(vm, f[k]);
    const float m = fmaxf(a.m, vm);
    if (m == -INFINITY) return a;   // only -inf so far: nothing to add
    float s = a.s * __expf(a.m - m);
#pragma unroll
    for (int k = 0; k < 8; ++k) s += __expf(f[k] - m);
    return {m, s};
}

// The block's (max, sum), bitwise the same in every thread: warp butterflies, then the W warp
// results combined in index order.
__device__ __forceinline__ MS block_ms(MS v, MS* red) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = combine(v, {__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    MS r = red[0];
#pragma unroll
    for (int w = 1; w < W; ++w) r = combine(r, red[w]);
    return r;
}

extern "C" __global__ void __launch_bounds__(T)
row_softmax(const __half* __restrict__ x, __half* __restrict__ out, int rows, int cols) {
    __shared__ MS red[W];
    const __half* xr = x + (long long)blockIdx.x * cols;
    __half* yr = out + (long long)blockIdx.x * cols;
    const __half pad = __ushort_as_half(0xFC00);   // -inf: contributes exp(-inf) = 0
    uint4 cache[C];
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int c = (threadIdx.x + k * T) * 8;
        if (c < cols) cache[k] = load8(xr, c, cols, pad);
    }
    // This thread's vectors in column order: the first C from registers, any further ones re-read.
    auto each = [&](auto&& fn) {
#pragma unroll
        for (int k = 0; k < C; ++k) {
            const int c = (threadIdx.x + k * T) * 8;
            if (c < cols) fn(c, cache[k]);
        }
        for (int c = (threadIdx.x + C * T) * 8; c < cols; c += T * 8) fn(c, load8(xr, c, cols, pad));
    };
    MS t = {-INFINITY, 0.0f};
    each([&](int, uint4 u) { float f[8]; unpack(u, f); t = fold8(t, f); });
    const MS r = block_ms(t, red);
    const float inv = 1.0f / r.s;
    each([&](int c, uint4 u) {
        float f[8];
        unpack(u, f);
#pragma unroll
        for (int k = 0; k < 8; ++k) f[k] = __expf(f[k] - r.m) * inv;
        store8(yr, c, cols, f);
    });
}
