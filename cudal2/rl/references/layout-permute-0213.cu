// layout-permute-0213: out[b][h][s][:] = x[b][s][h][:], x fp16 [b, s, h, d], out fp16 [b, h, s, d]
//   (the attention head split: torch's x.permute(0, 2, 1, 3).contiguous()). Exact (a copy).
// Technique: the innermost dimension d does not move, so the permutation is a gather of whole
//   d-element rows (256 bytes at d = 128) and needs no shared-memory transpose: each block owns one
//   (b, h) and 32 consecutive s, writes a contiguous 32 * d-element run of out, and reads 32 rows of
//   x at a stride of h * d. Every access is a 16-byte vector (LDG.128 / STG.128) and each d-row is
//   a run of whole 32-byte sectors on both sides, so both streams are fully coalesced and the copy
//   runs at DRAM bandwidth. The 3-D grid (s-tiles, h, b) avoids dividing a flat index by runtime
//   sizes; 64-bit offsets. d % 8 != 0 (rows not 16-byte aligned) takes a 2-byte path.
/* cudal2-launch
{
  "task": "layout-permute-0213",
  "kernels": [
    {"name": "layout_permute_0213", "grid": ["cdiv(s, 32)", "h", "b"], "block": [256],
     "args": ["x", "out", "b", "s", "h", "d"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

constexpr int SB = 32;   // s positions per block

extern "C" __global__ void __launch_bounds__(256)
layout_permute_0213(const __half* __restrict__ x, __half* __restrict__ out, int B, int S, int H, int D) {
    const int bi = blockIdx.z, hi = blockIdx.y, s0 = blockIdx.x * SB;
    const int ns = min(SB, S - s0);
    const __half* src = x + (((long long)bi * S + s0) * H + hi) * D;     // x[bi][s0][hi][0]
    __half* dst = out + (((long long)bi * H + hi) * S + s0) * D;         // out[bi][hi][s0][0]
    const long long src_stride = (long long)H * D;                       // from one s to the next in x
    if ((D & 7) == 0) {
        const int dv = D >> 3, total = ns * dv;   // 16-byte vectors
#pragma unroll 2
        for (int e = threadIdx.x; e < total; e += 256) {
            const int si = e / dv, j = e - si * dv;
            const uint4 u = __ldg(reinterpret_cast<const uint4*>(src + si * src_stride) + j);
            reinterpret_cast<uint4*>(dst + (long long)si * D)[j] = u;
        }
    } else {
        const int total = ns * D;
        for (int e = threadIdx.x; e < total; e += 256) {
            const int si = e / D, j = e - si * D;
            dst[(long long)si * D + j] = src[si * src_stride + j];
        }
    }
}
