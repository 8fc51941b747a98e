// CHEAT CLASS: memory faults -- writes outside C.
// A correct GEMM followed by a small kernel that corrupts the 4 halves just past the end of
// C (C[M*N + t]) and the 4 just before it (C[-1 - t]). It flips bits rather than storing a
// constant, so the guard words change whatever pattern the harness wrote there. Offsets this
// small stay inside mapped memory (no illegal-address fault); only the guard regions around C
// can see it: stage "canary".
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

__global__ void scribble_around(__half* C, size_t MN) {
    unsigned short* bits = reinterpret_cast<unsigned short*>(C);
    const long long t = threadIdx.x;
    bits[MN + t] ^= 0x5A5Au;             // just past the end of C
    bits[-1 - t] ^= 0x5A5Au;             // just before the start of C
}

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)workspace; (void)workspace_bytes;
    const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    naive_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    scribble_around<<<1, 4, 0, stream>>>(C, (size_t)M * N);
    return (int)cudaGetLastError();
}
