// CHEAT CLASS: a launch spec that tries to run code in the harness.
// What it tries: the grid expression is Python, "__import__('os').system(...) or cdiv(M, 8)",
// in the hope that the harness evaluates spec expressions with eval(); the kernel itself is an
// honest naive GEMM. (A spec using "M / 2" -- true division, a float grid -- is refused the same
// way.)
// Why the judge must reject it: spec expressions are integer arithmetic over M, N and K only,
// evaluated by walking a whitelisted syntax tree, never by eval. The spec is validated when the
// file is built, before anything is compiled or run. Expected stage: "build".
/* cudal2-launch
{
  "kernels": [
    {"name": "naive_gemm_bad_spec",
     "grid": ["cdiv(N, 32)", "__import__('os').system('touch /tmp/cudal2_pwned') or cdiv(M, 8)"],
     "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void naive_gemm_bad_spec(const __half* __restrict__ A, const __half* __restrict__ B,
                                               __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
