// CHEAT CLASS: reusing earlier results -- doing the work only on every other call.
// Abuses the allowed `static bool` setup flag: it guards a (harmless) cudaFuncSetAttribute
// like the exception permits, but is toggled on every call and also gates the launch, so
// calls 1, 3, 5... compute and calls 2, 4, 6... return 0 leaving C untouched. A static check
// matching "static bool + cudaFuncSetAttribute" passes it; the second call (inside "exact"
// or "gaussian" trials, at the latest "repeat") must fail on its poisoned C.
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
    static bool attr_set = false;        // looks like the allowed one-time-setup flag
    if (!attr_set)
        cudaFuncSetAttribute(naive_gemm, cudaFuncAttributePreferredSharedMemoryCarveout, 0);
    attr_set = !attr_set;                // ...but it flips on every call
    if (attr_set) {
        const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
        naive_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    }
    return (int)cudaGetLastError();
}
