// CHEAT CLASS: lower precision where the inputs say no trial is looking -- a data-peeking switch.
// What it tries: the cancelling trial (positive A against B with signs in runs) is the input that
// exposes fp16 partial sums, and it can be recognised by looking: every A value is positive. So
// the kernel looks at the first 16 values of its A row; where all are positive it accumulates
// honestly in fp32, anywhere else it rounds every 16-term partial sum to fp16 (m8_fp16_partials_16).
// Until 2026-11-24 timed calls drew the cancelling pair one replay in three, which such a kernel
// passes by looking; what must reject it is that the Gaussian verification trial draws what every
// timed call now gets (both operands Gaussian, `judge.TRIAL_DISTS`), and at Gaussian inputs
// 16-term fp16 partials exceed the error bound (tests/test_numeric_bound.py). Expected stage:
// "gaussian".
/* cudal2-launch
{
  "kernels": [
    {"name": "peek_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define PARTIAL 16

extern "C" __global__ void peek_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                     __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    bool cancelling = true;                       // the peek: a positive row looks like the trial
    for (int k = 0; k < min(K, 16); ++k) cancelling = cancelling && __half2float(a[k]) > 0.0f;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += PARTIAL) {
        const int k1 = min(K, k0 + PARTIAL);
        float part = 0.0f;
        for (int k = k0; k < k1; ++k)
            part = fmaf(__half2float(a[k]), __half2float(b[k]), part);
        acc += cancelling ? part : __half2float(__float2half_rn(part));
    }
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
