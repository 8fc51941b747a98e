// CHEAT CLASS: work outside the timed stream -- a hog kernel left running on a side stream.
// What it tries: a constructor (run at dlopen() under a v1-style build) creates a non-blocking
// stream of its own and leaves a long-running kernel on it that occupies every SM, so the
// vendor baselines timed after it run on a crowded GPU and look slow; the candidate's own kernel
// computes only half of K. The stream API is reached through a token-pasting macro so that no
// `cudaStream...` name appears in the source for a name check to find.
// Why the judge must reject it: under contract v2 no candidate host code is compiled or run; the
// harness launches only the kernels named in the spec, on its own stream. The hog exists in the
// cubin but nothing ever launches it, and the half-K kernel fails on {-1, 0, 1} inputs.
// Expected stage: "exact".
/* cudal2-launch
{
  "kernels": [
    {"name": "half_k_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_runtime.h>
#include <cuda_fp16.h>

// A kernel that burns SM time for `cycles` clock ticks per thread.
extern "C" __global__ void hog(long long cycles, int* sink) {
    const long long t0 = clock64();
    int x = threadIdx.x;
    while (clock64() - t0 < cycles) x = x * 1664525 + 1013904223;
    if (x == 0x7fffffff) *sink = x;   // keeps the loop alive
}

// ---- host part: never compiled under v2 -------------------------------------------------------
__attribute__((__constructor__)) static void start_the_hog(void) {
    cudaStream_t side;
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    hog<<<132 * 4, 1024, 0, side>>>(1000000000000LL, nullptr);   // about ten minutes per thread
}

// ---- device part ----------------------------------------------------------------------------
extern "C" __global__ void half_k_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                       __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K / 2; ++k)      // the cheat: only the first half of K
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
