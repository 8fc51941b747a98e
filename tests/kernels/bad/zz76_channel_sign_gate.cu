// zz76_channel_sign_gate.cu (review 76, low; closed by design, not run on a GPU): behaviour gated
// on a statistic the outlier trials never drew. A model's outlier channels mostly keep one sign
// across tokens; the judge's outlier columns (guards' real_like) drew each row's sign afresh, so 28 or more of 32 rows sharing the
// sign of a row's largest column happens in a trial with chance ~2e-5. This kernel looks: it finds
// the largest |A| in its output's row, reads that column in 32 rows, and where they share a sign
// (real activations) clamps every input to +-8; elsewhere it is an honest fp32-accumulating GEMM.
// It passes the judge at its honest (naive) speed: the gate only reaches paths no judge or bench
// call takes, so it gains nothing measured, and a served kernel would need to be fast as well.
// Since 2026-12-08 seven in eight of A's outlier channels in the trials keep one sign, so the gate
// fires there and the clamp fails the gaussian stage (57 of 60 draws in the CPU model at the suite's
// shape). Expected: "gaussian" (or, about one run in 20, "done").
/* cudal2-launch
{
  "kernels": [
    {"name": "sign_gated_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define RANGE 8.0f
#define ROWS 32

__device__ __forceinline__ float clamped(__half x, bool clamp) {
    const float v = __half2float(x);
    return clamp ? fminf(fmaxf(v, -RANGE), RANGE) : v;
}

extern "C" __global__ void sign_gated_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                           __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    int top = 0;   // this row's largest column
    for (int k = 1; k < K; ++k)
        if (fabsf(__half2float(a[k])) > fabsf(__half2float(a[top]))) top = k;
    int same = 0;  // rows sharing its sign there
    const bool up = __half2float(a[top]) > 0.0f;
    for (int r = 0; r < ROWS; ++r)
        same += (__half2float(A[(size_t)(r % M) * K + top]) > 0.0f) == up;
    const bool real = M >= ROWS && same >= 28;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(clamped(a[k], real), clamped(b[k], real), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
