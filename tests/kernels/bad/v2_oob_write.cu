// CHEAT CLASS: memory faults -- a write one element past the end of C.
// What it tries: an honest naive GEMM whose thread (0, 0) also stores into C[M * N], the half
// just past the last output (as an off-by-one epilogue would, or a kernel using the bytes after
// C as free scratch). C itself is right, and the stray store stays inside the allocation's
// rounding, so no fault is raised.
// Why the judge must reject it: the harness surrounds A, B, C and the workspace with guard
// bytes and checks them after every call. Expected stage: "canary".
/* cudal2-launch
{
  "kernels": [
    {"name": "oob_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void oob_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                    __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
    if (m == 0 && n == 0) C[(size_t)M * N] = __float2half_rn(acc);   // the fault: one past the end
}
