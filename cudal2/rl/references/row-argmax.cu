// row-argmax: out[r] = the FIRST c with x[r][c] maximal, x fp16 [rows, cols], out int32 [rows].
//   Exact, torch's rule: the lowest index among equal maxima (fp16 rows of 4096 have ties often),
//   -0 equal to +0, and a NaN counts as larger than any number (the first NaN wins).
// Technique: one warp per row, eight rows per 256-thread block, no shared memory. Each lane walks
//   its part of the row in increasing column order in 16-byte vectors (8 halves, LDG.128, unrolled
//   4x for loads in flight) and keeps (value, index) with a strict ">", so within a lane the first
//   maximum wins for free; the 5-step __shfl_xor_sync butterfly then merges (value, index) pairs
//   with the tie broken toward the lower index, which makes the result independent of the order
//   of the merge. cols % 8 != 0 (rows not 16-byte aligned) takes a 2-byte-load path.
/* cudal2-launch
{
  "task": "row-argmax",
  "kernels": [
    {"name": "row_argmax", "grid": ["cdiv(rows, 8)"], "block": [256], "args": ["x", "out", "rows", "cols"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

// Does (v, i) beat the running best (bv, bi)? bi < 0: nothing seen yet.
__device__ __forceinline__ bool better(float v, int i, float bv, int bi) {
    if (i < 0) return false;
    if (bi < 0) return true;
    const bool vn = v != v, bn = bv != bv;
    if (vn | bn) return vn && (!bn || i < bi);
    return v > bv || (v == bv && i < bi);
}

extern "C" __global__ void __launch_bounds__(256)
row_argmax(const __half* __restrict__ x, int* __restrict__ out, int rows, int cols) {
    const int row = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= rows) return;   // the whole warp leaves together
    const __half* p = x + (long long)row * cols;
    float bv = 0.0f;
    int bi = -1;
    if ((cols & 7) == 0) {
#pragma unroll 4
        for (int c = lane * 8; c < cols; c += 32 * 8) {
            const uint4 v = __ldg(reinterpret_cast<const uint4*>(p + c));
            const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const float2 f = __half22float2(h[k]);
                if (better(f.x, c + 2 * k, bv, bi)) { bv = f.x; bi = c + 2 * k; }
                if (better(f.y, c + 2 * k + 1, bv, bi)) { bv = f.y; bi = c + 2 * k + 1; }
            }
        }
    } else {
        for (int c = lane; c < cols; c += 32) {
            const float f = __half2float(p[c]);
            if (better(f, c, bv, bi)) { bv = f; bi = c; }
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (better(ov, oi, bv, bi)) { bv = ov; bi = oi; }
    }
    if (lane == 0) out[row] = bi;
}
