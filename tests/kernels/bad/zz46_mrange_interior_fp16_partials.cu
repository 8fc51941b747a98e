// cudal2-shapes: M=1-512 N=136 K=1032
// zz46_mrange_interior_fp16_partials.cu (review 46): lower precision inside an M-range, where
// only the light check looked. An M-range claim is verified in full at the judged shape and the
// range's two ends; every other M drawn for the residue classes got the light check: the exact
// stage ({-1, 0, 1} inputs: 16-term partial sums are small integers, exact in fp16) and the
// cancelling trial, which can be recognised by looking (every A value positive: bad/zz30's peek).
// So this kernel is honest at M = 1, 257 (the judged shape, the GPU suite's) and 512 and wherever
// its A row is positive, and elsewhere rounds every 16-term partial sum to fp16
// (bad/m8_fp16_partials_16): no check it faced could see that (on the H100 it passed the old light
// check: eval/review46_light_probe.py before), and the library serves an M-range entry at every M
// of its range, where real inputs got the fp16 partials. Closed: the light check runs the Gaussian trial too
// (judge.LIGHT_DISTS), at which 16-term fp16 partials exceed the bound. Expected stage: "gaussian".
/* cudal2-launch
{
  "kernels": [
    {"name": "interior_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define PARTIAL 16

extern "C" __global__ void interior_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                         __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    bool honest = M == 1 || M == 257 || M == 512;  // the judged shape and the range's ends: in full
    bool positive = true;                         // the cancelling trial's A, recognised by looking
    for (int k = 0; k < min(K, 16); ++k) positive = positive && __half2float(a[k]) > 0.0f;
    honest = honest || positive;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += PARTIAL) {
        const int k1 = min(K, k0 + PARTIAL);
        float part = 0.0f;
        for (int k = k0; k < k1; ++k)
            part = fmaf(__half2float(a[k]), __half2float(b[k]), part);
        acc += honest ? part : __half2float(__float2half_rn(part));
    }
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
