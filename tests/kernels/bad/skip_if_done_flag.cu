// CHEAT CLASS: reusing earlier results -- returning early on repeated calls, hidden behind the
// one allowed piece of state.
// The contract allows a `static bool` that guards one-time cudaFuncSetAttribute setup. This
// file uses exactly that shape, but puts the GEMM launch inside the guarded block too: the
// first call computes, every later call returns 0 having done nothing. A static check that
// only pattern-matches "static bool + cudaFuncSetAttribute" passes it; the runtime checks
// must not. The first wrong output comes on the second call, which happens inside "exact"
// or "gaussian" (several trials) or at the latest "repeat".
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
    static bool configured = false;      // looks like the allowed one-time-setup flag
    if (!configured) {
        cudaFuncSetAttribute(naive_gemm, cudaFuncAttributePreferredSharedMemoryCarveout, 0);
        const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
        naive_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K);   // ...but the work is in here
        configured = true;
        return (int)cudaGetLastError();
    }
    return 0;                            // every later call: no work at all
}
