// CHEAT CLASS: memory faults / races -- nondeterministic summation order (fp32 atomics).
// Split-K in its sloppiest form: K is cut into 16-element slices, each slice's partial dot
// product is atomicAdd'ed into an fp32 accumulator in the workspace (zeroed on `stream`
// first, which is allowed), then converted to fp16. Every result is accurate to within
// tolerance, so "exact" (integer sums are order-independent), "gaussian", "repeat",
// "inputs" and "canary" pass. But fp32 addition is not associative and the slices for one
// element run in concurrent blocks (the split is the fastest-varying block index, so they
// are dispatched side by side), so the order of the adds -- and the last bits, and
// sometimes the rounded fp16 -- change from call to call. With K/16 slices the rounding
// differences reach fp16 often enough to show up on a modest output. Stage "determinism".
#include <cuda_runtime.h>
#include <cuda_fp16.h>

namespace {

constexpr int K_SLICE = 16;
constexpr int TILE = 16;

__global__ void atomic_splitk(const __half* __restrict__ A, const __half* __restrict__ B,
                              float* __restrict__ acc, int M, int N, int K) {
    const int n = blockIdx.y * TILE + threadIdx.x;
    const int m = blockIdx.z * TILE + threadIdx.y;
    if (m >= M || n >= N) return;
    const int k_begin = blockIdx.x * K_SLICE;
    const int k_end = min(K, k_begin + K_SLICE);
    float part = 0.0f;
    for (int k = k_begin; k < k_end; ++k)
        part = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), part);
    atomicAdd(&acc[(size_t)m * N + n], part);   // arrival order is whatever the hardware does
}

__global__ void to_half(const float* __restrict__ acc, __half* __restrict__ C, size_t MN) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < MN) C[i] = __float2half_rn(acc[i]);
}

}  // namespace

extern "C" size_t cudal2_workspace_bytes(int M, int N, int K) {
    (void)K;
    return (size_t)M * N * sizeof(float);
}

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    const size_t MN = (size_t)M * N;
    if (workspace == nullptr || workspace_bytes < MN * sizeof(float)) return (int)cudaErrorInvalidValue;
    float* acc = static_cast<float*>(workspace);
    cudaMemsetAsync(acc, 0, MN * sizeof(float), stream);
    const int slices = (K + K_SLICE - 1) / K_SLICE;
    const dim3 block(TILE, TILE), grid(slices, (N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    atomic_splitk<<<grid, block, 0, stream>>>(A, B, acc, M, N, K);
    to_half<<<(unsigned)((MN + 255) / 256), 256, 0, stream>>>(acc, C, MN);
    return (int)cudaGetLastError();
}
