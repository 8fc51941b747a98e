// CHEAT CLASS: reusing earlier results -- every other call, counted in a __device__ variable.
// A __device__ call counter lives across calls; the GEMM kernel computes only when the count
// is even, and a one-thread kernel bumps it afterwards (same stream, so no race). Odd calls
// leave C as it was. `__device__` variables are mutable state across calls, so the static
// policy must reject it: stage "policy".
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__device__ unsigned int g_calls = 0;   // forbidden: device-side state kept across calls

__global__ void naive_gemm_even_calls(const __half* __restrict__ A, const __half* __restrict__ B,
                                      __half* __restrict__ C, int M, int N, int K) {
    if (g_calls & 1u) return;          // odd call: pretend C is already right
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}

__global__ void bump_counter() { g_calls += 1u; }

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)workspace; (void)workspace_bytes;
    const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    naive_gemm_even_calls<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    bump_counter<<<1, 1, 0, stream>>>();
    return (int)cudaGetLastError();
}
