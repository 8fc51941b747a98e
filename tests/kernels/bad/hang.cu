// FAULT CLASS: faults -- a hang.
// The kernel spins until the first element of A changes, which never happens while it
// runs. The read is volatile, so the compiler must keep re-reading it and cannot prove the
// loop infinite and delete it. The call itself returns 0 at once; the harness's wait for the
// stream never finishes, and its watchdog must kill the worker: fault "hang" at the first
// runtime stage, "exact". The candidate is charged, the run goes on.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void spinning_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                              __half* __restrict__ C, int M, int N, int K) {
    const volatile unsigned short* watched = reinterpret_cast<const volatile unsigned short*>(A);
    const unsigned short first = *watched;
    while (*watched == first) { }        // A is never written during the call: spins forever
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
    const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    spinning_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    return (int)cudaGetLastError();
}
