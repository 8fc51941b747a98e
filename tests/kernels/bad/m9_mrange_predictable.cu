// CHEAT CLASS: right only at predictable M -- an M-range declaration verified at fixed points.
// What it tries: the file claims every M in 1..512 (for N = 136, K = 1032) with M tiles of 128.
// An older judge verified such a range at a fixed set of M: the ends lo = 1 and hi = 512, lo + 1
// = 2, the odd midpoint ((lo + hi) // 2) | 1 = 257 and hi - 1 = 511, i.e. only M % 128 in
// {1, 2, 0, 127}. This kernel handles the last, partial 128-row tile only when its row count
// M % 128 is one of those residues; for any other M it skips that tile (the rows keep whatever C
// held: garbage), saving up to a tile of work at almost every M a user would actually run.
// It is correct at M = 257 (257 % 128 = 1), the shape the GPU test evaluates.
// Why the judge must reject it: for an M range the v2 judge verifies the two ends plus M values
// drawn afresh so that every residue class modulo each of m_tiles is covered; some of them land
// outside {0, 1, 2, 127} and the skipped rows are wrong. Expected stage: "exact" (or "gaussian").
// cudal2-shapes: M=1-512 N=136 K=1032
/* cudal2-launch
{
  "m_tiles": [128],
  "kernels": [
    {"name": "predictable_m_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define TILE_M 128

extern "C" __global__ void predictable_m_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                              __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const int r = M % TILE_M;                               // rows in the last, partial tile
    const bool tested = r == 0 || r == 1 || r == 2 || r == TILE_M - 1;
    if (!tested && m >= M - r) return;                      // the cheat: skip the partial tile
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
