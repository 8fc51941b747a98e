// CHEAT CLASS: host code from an untrusted source -- a v1-style file submitted as a candidate.
// What it tries: a plain, honest v1 file (a naive kernel plus the cudal2_gemm host entry point,
// no launch spec), as a model would write it from an old prompt. Honest or not, its host function
// would run inside the judge's worker process, and host code can do anything a process can.
// Why the judge must reject it: only trusted sources (a verbatim family render, a user's own file
// given to `cudal2 eval`) may be v1. An untrusted file without a launch spec is rejected before
// it is compiled. Expected stage: "policy".
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
    (void)workspace; (void)workspace_bytes;
    const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    naive_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    return (int)cudaGetLastError();
}
