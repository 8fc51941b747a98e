// layout-transpose: out[c][r] = x[r][c], x fp16 [rows, cols], out fp16 [cols, rows]. Exact (a copy).
// Technique: shared-memory tiled transpose, 64 x 64 fp16 tiles, 256 threads, 16-byte global
//   accesses on both sides and no shared-memory bank conflicts:
//   * load: each thread reads two 16-byte row vectors of the tile (a warp covers 4 rows x 128 B,
//     coalesced) and writes them as four 32-bit words into a tile with a 66-half (33-word) pitch;
//     word bank = (row + 4 * vector + j) % 32 covers all 32 banks across a warp;
//   * store: each thread gathers 8 halves down one tile column (8 consecutive input rows) and
//     writes them as one 16-byte vector of an output row. A warp's lanes are 16 columns x 2 row
//     chunks: a pair of lanes writes 32 contiguous bytes (a full sector) of an output row, and
//     the two chunks sit 8 rows (8 * 33 = 264 words, 8 banks) apart, so the 32 lanes' 2-byte reads
//     fall in 16 distinct words of 16 distinct banks.
//   Tiles at the edge of the matrix, or rows/cols not multiples of 8 (16-byte alignment), take an
//   element-by-element path through the same tile (correct, slower).
/* cudal2-launch
{
  "task": "layout-transpose",
  "kernels": [
    {"name": "layout_transpose", "grid": ["cdiv(cols, 64)", "cdiv(rows, 64)"], "block": [256],
     "args": ["x", "out", "rows", "cols"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

constexpr int TS = 64;   // tile side
constexpr int P = 66;    // tile pitch in halves: 33 words, odd, so columns spread over the banks

union V8 { uint4 u; __half h[8]; };

extern "C" __global__ void __launch_bounds__(256)
layout_transpose(const __half* __restrict__ x, __half* __restrict__ out, int rows, int cols) {
    __shared__ __align__(16) __half tile[TS * P];
    const int r0 = blockIdx.y * TS, c0 = blockIdx.x * TS, t = threadIdx.x;
    if (((rows | cols) & 7) == 0 && r0 + TS <= rows && c0 + TS <= cols) {
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int q = t + k * 256, r = q >> 3, v = q & 7;   // tile row, 16-byte vector in it
            const uint4 u = __ldg(reinterpret_cast<const uint4*>(x + (long long)(r0 + r) * cols + c0 + v * 8));
            uint32_t* s = reinterpret_cast<uint32_t*>(tile + r * P + v * 8);
            s[0] = u.x; s[1] = u.y; s[2] = u.z; s[3] = u.w;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const int q = t + k * 256;
            const int c = (q >> 1) & 63;                  // tile column = output row
            const int ch = (q & 1) + 2 * (q >> 7);        // which 8 input rows: 0..7
            V8 o;
#pragma unroll
            for (int i = 0; i < 8; ++i) o.h[i] = tile[(ch * 8 + i) * P + c];
            *reinterpret_cast<uint4*>(out + (long long)(c0 + c) * rows + r0 + ch * 8) = o.u;
        }
    } else {
        for (int q = t; q < TS * TS; q += 256) {
            const int r = q / TS, c = q % TS;
            if (r0 + r < rows && c0 + c < cols) tile[r * P + c] = x[(long long)(r0 + r) * cols + c0 + c];
        }
        __syncthreads();
        for (int q = t; q < TS * TS; q += 256) {
            const int c = q / TS, r = q % TS;
            if (r0 + r < rows && c0 + c < cols) out[(long long)(c0 + c) * rows + r0 + r] = tile[r * P + c];
        }
    }
}
