// naive_v2.cu: good/naive.cu under contract v2 (device code plus a launch spec, no host code).
// One thread owns one element of C, walks the whole K dimension in order, accumulates in fp32
// and rounds to fp16 once. No shared memory, no tiling, no cross-thread communication: nothing
// can race or go out of bounds, and it is correct for any M, N and K. Slow on purpose; it proves
// the harness passes an honest v2 kernel.
/* cudal2-launch
{
  "kernels": [
    {"name": "naive_gemm_v2", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void naive_gemm_v2(const __half* __restrict__ A, const __half* __restrict__ B,
                                         __half* __restrict__ C, int M, int N, int K) {
    // n on the fast axis so that neighbouring threads write neighbouring C elements.
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;   // row m of A
    const __half* b = B + (size_t)n * K;   // row n of B (= column n of B^T)
    float acc = 0.0f;                      // fp32 accumulator, as the contract requires
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);   // the one rounding to fp16
}
