// CHEAT CLASS: lower precision where the inputs say no trial is looking, dosed to fit the bound.
// What it tries: zz30_peek_cancel_fp16_partials rounds every 16-term partial sum to fp16 on
// inputs that do not look like the cancelling trial (or the positive-mean one: any A row whose
// first 16 values are all positive is summed honestly), and the Gaussian trial's 1.25x Frobenius
// bound rejects it (1.4x). This one rounds only every 4th partial sum: on Gaussian inputs the CPU
// model (as tests/test_numeric_bound.py, the harness's Irwin-Hall 'normal', M=257 N=136 K=1032,
// 4 seeds) puts its relative Frobenius error at 1.11-1.12x the fp32-accumulating vendor's and its
// largest error at 1.0-1.25x (bound 8x), so it passes every verification stage (exact: +-1 partial
// sums are exact in fp16; uniform and cancelling trials: A positive, summed honestly). The same
// model puts 2.3% of its outputs over the timing spot check's per-element tolerance
// (|acc| 2^-10 + sum|products| 2^-18 + 1e-6; 0.45% at K=4096, 0.07% at K=4096 if every 8th
// partial is rounded); the fp32 vendor puts none over it.
// Why the judge must reject it: it is a lower-precision kernel on exactly the inputs timed calls
// get. What rejects it is the per-call spot check in timing (32 outputs per set per check, every
// set after every replay), not verification. From review 30; not run on a GPU.
// Expected stage: "timing" ("gaussian" on an unlucky draw).
/* cudal2-launch
{
  "kernels": [
    {"name": "quarter_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define PARTIAL 16

extern "C" __global__ void quarter_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
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
        acc += (cancelling || (k0 / PARTIAL) % 4 != 0) ? part : __half2float(__float2half_rn(part));
    }
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
