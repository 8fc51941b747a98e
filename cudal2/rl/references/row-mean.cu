// row-mean: out[r] = (sum_c x[r][c]) / cols, x fp16 [rows, cols], out fp16 [rows].
//   Numerics: the fp32 sum, then an IEEE division by cols as torch's mean does, rounded once.
// Technique: one warp per row, eight rows per 256-thread block, no shared memory and no
//   __syncthreads. Each lane walks the row in 16-byte vectors (8 halves, LDG.128) at a stride of
//   32 vectors, so a warp reads 512 contiguous bytes per step; the loop is unrolled 4x so four loads
//   per lane are in flight (the kernel is a pure DRAM stream). Each lane accumulates in fp32, then a
//   5-step butterfly of __shfl_xor_sync combines the 32 partials in a fixed order: deterministic.
//   cols % 8 != 0 (rows not 16-byte aligned) takes a 2-byte-load path, correct and slower.
/* cudal2-launch
{
  "task": "row-mean",
  "kernels": [
    {"name": "row_mean", "grid": ["cdiv(rows, 8)"], "block": [256], "args": ["x", "out", "rows", "cols"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

extern "C" __global__ void __launch_bounds__(256)
row_mean(const __half* __restrict__ x, __half* __restrict__ out, int rows, int cols) {
    const int row = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= rows) return;   // the whole warp leaves together
    const __half* p = x + (long long)row * cols;
    float acc = 0.0f;
    if ((cols & 7) == 0) {
#pragma unroll 4
        for (int c = lane * 8; c < cols; c += 32 * 8) {
            const uint4 v = __ldg(reinterpret_cast<const uint4*>(p + c));
            const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const float2 f2 = __half22float2(h[k]);
                float f = f2.x;
                acc += f;
                f = f2.y;
                acc += f;
            }
        }
    } else {
        for (int c = lane; c < cols; c += 32) {
            const float f = __half2float(p[c]);
            acc += f;
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) out[row] = __float2half_rn(acc / (float)cols);
}
