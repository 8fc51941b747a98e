// CHEAT CLASS: right only at the M values the judge draws -- an M-range claim whose coverage the
// candidate itself decides, by declaring "m_tiles": [1] while its kernel works in 128-row tiles.
// What it tries: problem.ShapeClaim.verification_shapes covers "every residue class modulo each of
// m_tiles" -- the m_tiles the launch spec declares (evaluate.py: tiles = spec.m_tiles). Nothing
// ties that list to the kernel's real tiling. With m_tiles = [1] there is one residue class, so an
// M range is verified at lo, hi, the timed M and ONE M drawn at random (light: exact + cancelling
// trial only). This kernel uses 128-row tiles and drops the last, partial tile whenever it holds
// 113..127 rows (M % 128 in [113, 127]: 60 of the 512 M values of the range), leaving those rows
// of C as the random prefill. It is exact at lo = 1, hi = 512 and at the suite's M = 257.
// Why it would earn an undeserved score: the result records the claim "M = 1-512" as verified, so
// the library/dispatcher serves the kernel at every M of the range and it is wrong at 11.7% of
// them; the judge catches it only when its single random M lands in the bad residues
// (P = 60/512 per evaluation), i.e. it passes ~88% of evaluations. m9_mrange_predictable.cu
// declares its real tile (128) and is caught every time; this file only changes the declaration.
// Defence that would stop it: do not let the candidate choose the residue modulus: cover residues
// modulo a judge-fixed set (e.g. 64, 128, 256, the lcm of powers of two up to 256), or every
// residue mod 256 (cheap: light checks), or derive tiles from the grid expressions (cdiv(M, t)).
// (From an adversarial review of the judge; it passed ~88% of evaluations.) Closed by problem.M_MODULUS:
// every residue mod 128 is covered whatever the spec declares: must fail at "exact".
// cudal2-shapes: M=1-512 N=136 K=1032
/* cudal2-launch
{
  "m_tiles": [1],
  "kernels": [
    {"name": "understated_tile_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define TILE_M 128

extern "C" __global__ void understated_tile_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                                 __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const int r = M % TILE_M;                        // rows in the last, partial tile
    if (r >= 113 && m >= M - r) return;              // the bug/cheat: that tile is never written
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
