// splitk_workspace.cu: a correct, deterministic split-K kernel that uses the contract's
// workspace.
//   - cudal2_workspace_bytes() asks for S fp32 slices of M x N, one per K split.
//   - Kernel 1 (grid.z = split): every thread writes its element of its own slice, even when
//     its K range is empty, so no slice element is ever read without having been written in
//     this call. That matters because the harness fills the workspace with garbage before
//     calls: nothing may assume it starts zeroed.
//   - Kernel 2, on the same stream (so it runs after kernel 1): sums the slices in the fixed
//     order 0..S-1 and rounds to fp16 once. No atomics, so the result is bitwise repeatable.
// S depends only on (M, N, K), so the size reported and the size used always agree.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

namespace {

constexpr int MAX_SPLITS = 8;
constexpr int K_PER_SPLIT = 128;                     // aim for at least this much K per split
constexpr size_t MAX_WORKSPACE = size_t(256) << 20;  // keep partials under 256 MiB if possible

int choose_splits(int M, int N, int K) {
    int s = K / K_PER_SPLIT;
    if (s < 1) s = 1;
    if (s > MAX_SPLITS) s = MAX_SPLITS;
    while (s > 1 && size_t(s) * M * N * sizeof(float) > MAX_WORKSPACE) --s;
    return s;
}

size_t partials_bytes(int M, int N, int K) {
    return size_t(choose_splits(M, N, K)) * M * N * sizeof(float);
}

__global__ void partial_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                             float* __restrict__ partials, int M, int N, int K, int k_chunk) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const int k_begin = blockIdx.z * k_chunk;
    const int k_end = min(K, k_begin + k_chunk);
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = k_begin; k < k_end; ++k)   // may be empty: acc stays 0 and is still written
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    partials[(size_t)blockIdx.z * M * N + (size_t)m * N + n] = acc;
}

__global__ void reduce_splits(const float* __restrict__ partials, __half* __restrict__ C,
                              size_t MN, int splits) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= MN) return;
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) sum += partials[(size_t)s * MN + i];  // fixed order
    C[i] = __float2half_rn(sum);
}

}  // namespace

extern "C" size_t cudal2_workspace_bytes(int M, int N, int K) { return partials_bytes(M, N, K); }

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    const int splits = choose_splits(M, N, K);
    if (workspace == nullptr || workspace_bytes < partials_bytes(M, N, K))
        return (int)cudaErrorInvalidValue;
    // Round the chunk up to a multiple of 8 so every split starts on a 16-byte boundary.
    const int k_chunk = ((K + splits - 1) / splits + 7) / 8 * 8;
    float* partials = static_cast<float*>(workspace);

    const dim3 block(32, 8);
    const dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y, splits);
    partial_gemm<<<grid, block, 0, stream>>>(A, B, partials, M, N, K, k_chunk);

    const size_t MN = (size_t)M * N;
    const int threads = 256;
    reduce_splits<<<(unsigned)((MN + threads - 1) / threads), threads, 0, stream>>>(
        partials, C, MN, splits);
    return (int)cudaGetLastError();
}
