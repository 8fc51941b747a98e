// zz74_clamped_inputs.cu (review 71's open finding): behaviour gated on input magnitude. Every input
// the judge drew was within |x| <= 3.4648 (its N(0, 1) summed four bounded uniforms; 5.77 since) and
// the bench's within ~6.7, while a model's activations have outliers of 10 to 1000s. This kernel
// clamps every input to +-8 before it multiplies: on every input the judge and the bench drew it is
// an honest fp32-accumulating GEMM, bit for bit; on a real model's outlier channels it is wrong.
// Clamping stands for any reduced-range arithmetic (a fixed-point or fixed-scale format that holds
// [-8, 8]). Closed: the gaussian stage's outlier trials (guards' modes 4-9: values off every grid, A
// at an activation's scale and B at a weight's, outliers 2^j times the bulk in whole columns and
// single elements of A, of B, or of both), at every full shape and every light one (reviews 71, 74).
// Expected stage: "gaussian".
/* cudal2-launch
{
  "kernels": [
    {"name": "clamped_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define RANGE 8.0f

__device__ __forceinline__ float clamped(__half x) { return fminf(fmaxf(__half2float(x), -RANGE), RANGE); }

extern "C" __global__ void clamped_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                        __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(clamped(a[k]), clamped(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
