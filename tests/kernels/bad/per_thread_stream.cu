// CHEAT CLASS: work outside the timed stream -- the per-thread default stream.
// A correct GEMM launched on cudaStreamPerThread instead of the caller's `stream`, so the
// caller's events and graph capture do not see it. The static policy must reject the use of
// cudaStreamPerThread: stage "policy".
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void naive_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                           __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)workspace; (void)workspace_bytes; (void)stream;
    const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    naive_gemm<<<grid, block, 0, cudaStreamPerThread>>>(A, B, C, M, N, K);  // forbidden
    return (int)cudaGetLastError();
}
