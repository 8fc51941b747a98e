// tiled_v2.cu: an honest shared-memory tiled GEMM under contract v2, on the tensor cores.
//   - Block tile 64 (M) x 64 (N), K step 32; 128 threads = 4 warps in a 2 x 2 grid, each warp
//     owning a 32 x 32 sub-tile = 2 x 4 mma.sync.m16n8k16 (f16 inputs, f32 accumulators).
//   - A and B are both K-contiguous (A row-major M x K, B row-major N x K), which is exactly
//     the "row.col" operand layout of mma.sync, so both tiles are stored [row][k] in shared
//     memory (padded by 8 halves per row) and fragments are read with 32-bit loads.
//   - Tails: global loads move 16-byte chunks (8 halves). K % 8 == 0, so a chunk is either
//     wholly inside K or wholly outside; chunks outside K or past the last row of A / B are
//     zero-filled, and the epilogue stores only in-bounds elements. Correct for any M, N and
//     any K % 8 == 0.
//   - fp32 accumulation throughout; each output is rounded to fp16 once, in the epilogue.
/* cudal2-launch
{
  "m_tiles": [64],
  "kernels": [
    {"name": "tiled_mma_gemm", "grid": ["cdiv(N, 64)", "cdiv(M, 64)", 1], "block": [128, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

#define BM 64
#define BN 64
#define BK 32
#define PAD 8
#define LDS (BK + PAD)   // shared row stride in halves: 80 bytes, a multiple of 16

__device__ __forceinline__ void mma_16816(float* c, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Copy a 64 x 32 tile of a K-contiguous matrix (rows row0.., k0..) into shared memory,
// zero-filling chunks outside [0, rows) x [0, K).
__device__ __forceinline__ void load_tile(__half (*S)[LDS], const __half* __restrict__ G, int rows, int K,
                                          int row0, int k0, int tid) {
#pragma unroll
    for (int i = 0; i < (64 * BK / 8) / 128; ++i) {
        const int c = tid + i * 128;
        const int r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (row0 + r < rows && k0 + kc < K)
            v = *reinterpret_cast<const uint4*>(G + (size_t)(row0 + r) * K + k0 + kc);
        *reinterpret_cast<uint4*>(&S[r][kc]) = v;
    }
}

extern "C" __global__ void __launch_bounds__(128)
tiled_mma_gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
               int M, int N, int K) {
    __shared__ __align__(16) __half As[BM][LDS];
    __shared__ __align__(16) __half Bs[BN][LDS];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 1, wn = warp & 1;          // warp's 32 x 32 sub-tile
    const int g = lane >> 2, t = lane & 3;            // mma fragment coordinates
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    float acc[2][4][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile(As, A, M, K, m0, k0, tid);
        load_tile(Bs, B, N, K, n0, k0, tid);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            uint32_t af[2][4], bf[4][2];
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
                const int r = wm * 32 + mi * 16 + g;
                af[mi][0] = *reinterpret_cast<const uint32_t*>(&As[r][kk + t * 2]);
                af[mi][1] = *reinterpret_cast<const uint32_t*>(&As[r + 8][kk + t * 2]);
                af[mi][2] = *reinterpret_cast<const uint32_t*>(&As[r][kk + t * 2 + 8]);
                af[mi][3] = *reinterpret_cast<const uint32_t*>(&As[r + 8][kk + t * 2 + 8]);
            }
#pragma unroll
            for (int ni = 0; ni < 4; ++ni) {
                const int c = wn * 32 + ni * 8 + g;
                bf[ni][0] = *reinterpret_cast<const uint32_t*>(&Bs[c][kk + t * 2]);
                bf[ni][1] = *reinterpret_cast<const uint32_t*>(&Bs[c][kk + t * 2 + 8]);
            }
#pragma unroll
            for (int mi = 0; mi < 2; ++mi)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni) mma_16816(acc[mi][ni], af[mi], bf[ni]);
        }
        __syncthreads();   // everyone is done reading before the next tile overwrites shared memory
    }

    // Epilogue: c0, c1 at (row g, cols 2t, 2t+1); c2, c3 at (row g + 8, same cols).
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int m = m0 + wm * 32 + mi * 16 + g + (e >= 2 ? 8 : 0);
                const int n = n0 + wn * 32 + ni * 8 + t * 2 + (e & 1);
                if (m < M && n < N) C[(size_t)m * N + n] = __float2half_rn(acc[mi][ni][e]);
            }
}
