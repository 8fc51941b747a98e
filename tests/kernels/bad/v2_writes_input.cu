// CHEAT CLASS: memory faults -- writes into B (an input used as scratch).
// What it tries: an honest naive GEMM, then a second kernel (same stream, so after every read of
// B) that writes into B, casting away const: it flips the lowest bit of the first 64 halves, as
// a kernel would that used B's buffer for scratch or stored a flag in it. C is right for the call
// that ran, but the caller's weights are damaged.
// Why the judge must reject it: A and B are compared bitwise with untouched copies right after
// every call, before the output is compared. Expected stage: "inputs".
/* cudal2-launch
{
  "kernels": [
    {"name": "naive_gemm_then", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]},
    {"name": "scribble_on_b", "grid": [1], "block": [64], "args": ["B", {"int": "min(N * K, 64)"}]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void naive_gemm_then(const __half* __restrict__ A, const __half* __restrict__ B,
                                           __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}

extern "C" __global__ void scribble_on_b(__half* B, int count) {
    const int i = threadIdx.x;
    if (i < count) B[i] = __ushort_as_half(__half_as_ushort(B[i]) ^ 1u);   // always a different bit pattern
}
