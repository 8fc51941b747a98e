// CHEAT CLASS: lower precision than the contract -- fp16 partial sums of 32 terms.
// What it tries: the accumulator is fp32, but every 32 consecutive k terms are summed in fp32 and
// that partial sum is rounded to fp16 before it is added to the accumulator (as a kernel would
// that accumulates k-slices in an fp16 tensor-core accumulator and only the slices in fp32).
// On {-1, 0, 1} inputs each partial is an integer of magnitude <= 32, exact in fp16, so it
// passes "exact"; on ordinary Gaussian inputs the extra error is small enough to hide near
// cuBLAS's own. It breaks the contract (fp32 accumulation, one rounding at the end).
// Why the judge must reject it: the gaussian stage's cancelling trial (positive A; B positive on
// the first half of K and negative on the second) makes every partial large while the result is
// small, so the partials' fp16 rounding errors are large against the result and far beyond
// cuBLAS's error (eval/tolerance_separation.py). Expected stage: "gaussian".
/* cudal2-launch
{
  "kernels": [
    {"name": "fp16_partials_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define PARTIAL 32

extern "C" __global__ void fp16_partials_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                              __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += PARTIAL) {
        const int k1 = min(K, k0 + PARTIAL);
        float part = 0.0f;
        for (int k = k0; k < k1; ++k)
            part = fmaf(__half2float(a[k]), __half2float(b[k]), part);
        acc += __half2float(__float2half_rn(part));   // the cheat: the partial goes through fp16
    }
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
