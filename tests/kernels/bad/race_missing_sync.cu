// CHEAT CLASS: memory faults -- reads of shared memory another warp has not written yet (a race).
// A classic 16x16 shared-memory tiled GEMM with both __syncthreads() removed: the one that
// makes a tile visible before it is read, and the one that stops a fast warp from
// overwriting the tile while slow warps still read it. Thread (ty, tx) reads row tx of the B
// tile, which another warp loads, so it can see stale or uninitialised shared memory. Saving
// the barriers is "faster" and sometimes right; the results are wrong and vary from run to
// run. Expected to fail at one of "exact", "gaussian", "repeat" or, if every output happened
// to be right, "determinism".
#include <cuda_runtime.h>
#include <cuda_fp16.h>

constexpr int T = 16;

__global__ void racy_tiled_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                __half* __restrict__ C, int M, int N, int K) {
    __shared__ __half sA[T][T];
    __shared__ __half sB[T][T];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int m0 = blockIdx.y * T, n0 = blockIdx.x * T;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        // Every thread loads one element of each tile (out-of-range threads load zeros and
        // stay in the loop, as a correct version would).
        const int k = k0 + tx;
        sA[ty][tx] = (m0 + ty < M && k < K) ? A[(size_t)(m0 + ty) * K + k] : __float2half(0.0f);
        sB[ty][tx] = (n0 + ty < N && k < K) ? B[(size_t)(n0 + ty) * K + k] : __float2half(0.0f);
        // MISSING: __syncthreads();  (tile not yet complete when read below)
        for (int kk = 0; kk < T; ++kk)
            acc = fmaf(__half2float(sA[ty][kk]), __half2float(sB[tx][kk]), acc);
        // MISSING: __syncthreads();  (next iteration may overwrite what others still read)
    }
    if (m0 + ty < M && n0 + tx < N) C[(size_t)(m0 + ty) * N + n0 + tx] = __float2half_rn(acc);
}

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)workspace; (void)workspace_bytes;
    const dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
    racy_tiled_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    return (int)cudaGetLastError();
}
