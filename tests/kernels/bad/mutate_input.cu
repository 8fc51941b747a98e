// CHEAT CLASS: memory faults -- writes into A (using an input as scratch).
// A correct GEMM followed by a kernel that zeroes the first 64 halves of A (casting away
// const). C is right for the call that ran, but the caller's input is damaged. The harness
// compares A and B bitwise after every call: stage "inputs". (If a harness computed its
// reference from the buffers the candidate had already touched, row 0 of the reference would
// be wrong and this would fail at "exact" instead.)
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

__global__ void clobber_input(__half* A, size_t count) {
    const size_t i = threadIdx.x;
    if (i < count) A[i] = __float2half(0.0f);
}

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)workspace; (void)workspace_bytes;
    const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    naive_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    const size_t total = (size_t)M * K;
    clobber_input<<<1, 64, 0, stream>>>(const_cast<__half*>(A), total < 64 ? total : 64);
    return (int)cudaGetLastError();
}
