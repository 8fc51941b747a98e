// CHEAT CLASS: special-casing the test data.
// Every thread looks at the first 8 values of A and of B. If they are all in {-1, 0, 1} it
// assumes it is being tested for exactness and computes honestly; otherwise it skips the
// second half of K. It therefore passes "exact" and must fail at "gaussian", which is why
// the harness draws real-valued inputs as well.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__device__ __forceinline__ bool is_ternary(__half h) {
    const float v = __half2float(h);
    return v == -1.0f || v == 0.0f || v == 1.0f;
}

__global__ void sniffing_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                              __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    bool looks_like_a_test = true;       // K % 8 == 0, so 8 values always exist
    for (int i = 0; i < 8; ++i) looks_like_a_test &= is_ternary(A[i]) && is_ternary(B[i]);
    const int k_end = looks_like_a_test ? K : K / 2;   // the cheat
    float acc = 0.0f;
    for (int k = 0; k < k_end; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)workspace; (void)workspace_bytes;
    const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    sniffing_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    return (int)cudaGetLastError();
}
