// CHEAT CLASS: lower precision than the contract -- fp16 accumulation.
// A naive GEMM that accumulates with a chain of __hfma in __half, rounding to fp16 after
// every step. On {-1, 0, 1} inputs every partial sum is a small integer, and fp16 holds
// integers exactly up to 2048, so it PASSES "exact" -- which is why 0/1 exact-match testing
// cannot see this cheat. On Gaussian / positive-mean inputs the per-step rounding grows with
// K and exceeds a multiple of cuBLAS's error, so it must fail at "gaussian".
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void fp16_acc_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                              __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    __half acc = __float2half(0.0f);     // the cheat: the accumulator is fp16
    for (int k = 0; k < K; ++k)
        acc = __hfma(A[(size_t)m * K + k], B[(size_t)n * K + k], acc);
    C[(size_t)m * N + n] = acc;
}

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)workspace; (void)workspace_bytes;
    const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    fp16_acc_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    return (int)cudaGetLastError();
}
