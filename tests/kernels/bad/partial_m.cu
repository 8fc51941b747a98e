// CHEAT CLASS: less work than asked -- partial M (a grid too small).
// A naive GEMM whose grid covers only the first M-16 rows when M > 16: the last 16 rows of C
// keep whatever was there (NaN poison in the harness). Must fail at "exact" for any verified
// shape with M > 16.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void naive_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                           __half* __restrict__ C, int M, int N, int K, int rows) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= rows || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)workspace; (void)workspace_bytes;
    const int rows = M > 16 ? M - 16 : M;    // the cheat: drop the last 16 rows
    const dim3 block(32, 8), grid((N + 31) / 32, (rows + 7) / 8);
    naive_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K, rows);
    return (int)cudaGetLastError();
}
