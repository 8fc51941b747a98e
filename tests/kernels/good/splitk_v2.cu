// splitk_v2.cu: a correct, deterministic split-K GEMM under contract v2, using the workspace.
//   - The workspace holds S = 4 fp32 slices of M x N ("4 * M * N * 4" bytes).
//   - Kernel 1 (grid.z = split s): each thread sums its K range [s*kc, min(K, (s+1)*kc)) in
//     fp32 and writes its element of slice s, even when that range is empty, so nothing is
//     ever read from the workspace that this call did not write (the harness fills the
//     workspace with random bytes before every call). kc = cdiv(K / 8, 4) * 8 comes from the
//     spec as an {"int": ...} argument.
//   - Kernel 2 (same stream, so after kernel 1): sums the slices in the fixed order 0..3 and
//     rounds to fp16 once. No atomics: bitwise repeatable.
// Correct for any M, N and any K % 8 == 0.
/* cudal2-launch
{
  "workspace": "4 * M * N * 4",
  "kernels": [
    {"name": "splitk_partials", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 4], "block": [32, 8, 1],
     "args": ["A", "B", {"ws": 0}, "M", "N", "K", {"int": "cdiv(K // 8, 4) * 8"}]},
    {"name": "splitk_reduce", "grid": ["cdiv(M * N, 256)"], "block": [256],
     "args": [{"ws": 0}, "C", {"int": "M * N"}]}
  ]
}
*/
#include <cuda_fp16.h>

#define SPLITS 4

extern "C" __global__ void splitk_partials(const __half* __restrict__ A, const __half* __restrict__ B,
                                           float* __restrict__ P, int M, int N, int K, int kchunk) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    const int s = blockIdx.z;
    if (m >= M || n >= N) return;
    const int k0 = min(K, s * kchunk), k1 = min(K, k0 + kchunk);
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = k0; k < k1; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    P[(size_t)s * M * N + (size_t)m * N + n] = acc;   // written even when the range is empty
}

extern "C" __global__ void splitk_reduce(const float* __restrict__ P, __half* __restrict__ C, int MN) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= MN) return;
    float acc = 0.0f;
#pragma unroll
    for (int s = 0; s < SPLITS; ++s)       // fixed order: deterministic
        acc += P[(size_t)s * MN + i];
    C[i] = __float2half_rn(acc);
}
