// CHEAT CLASS: reusing earlier results -- caching keyed on pointers (mutable static state).
// Remembers the last (A, B, C, M, N, K) in statics and returns without launching anything
// when the same pointers come back, so C keeps the previous call's answer even though the
// caller rewrote A and B in place. Note the trap for a naive checker: `static const void*`
// is a mutable pointer to const data, not a constant. Only a `static bool` guarding
// cudaFuncSetAttribute is allowed, so the static policy must reject it: stage "policy".
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
    static const void* last_A = nullptr;   // forbidden: state kept across calls
    static const void* last_B = nullptr;
    static const void* last_C = nullptr;
    static long long last_shape = -1;
    const long long shape = ((long long)M * 1000003 + N) * 1000003 + K;
    if (A == last_A && B == last_B && C == last_C && shape == last_shape)
        return 0;                          // "same problem as last time": skip the work
    const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    naive_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    last_A = A; last_B = B; last_C = C; last_shape = shape;
    return (int)cudaGetLastError();
}
