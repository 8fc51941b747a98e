// zz44_compile_memory_bomb.cu: eight lines of macros expand to 4 x 10^7 tokens (an 80 MB
// preprocessed file), and cicc's memory grows without bound on it: with no limit, this one build
// reached 24 GB in two minutes and the kernel's OOM killer ended it (a 23 GB CPU machine), within
// the build's 300 s timeout. Builds run in parallel, one a core, beside the trainer, so one such
// completion could take the machine's memory, trainer and all. The build had a time limit and no
// memory limit (closed: a v2 build's compiler processes run under build.max_memory_mb of address
// space, 4 GiB by default, and fail "out of memory"). Must fail at build; the kernel itself is
// naive_v2's.
#define ZZ0 1+1+1+1+1+1+1+1+1+1+
#define ZZ1 ZZ0 ZZ0 ZZ0 ZZ0 ZZ0 ZZ0 ZZ0 ZZ0 ZZ0 ZZ0
#define ZZ2 ZZ1 ZZ1 ZZ1 ZZ1 ZZ1 ZZ1 ZZ1 ZZ1 ZZ1 ZZ1
#define ZZ3 ZZ2 ZZ2 ZZ2 ZZ2 ZZ2 ZZ2 ZZ2 ZZ2 ZZ2 ZZ2
#define ZZ4 ZZ3 ZZ3 ZZ3 ZZ3 ZZ3 ZZ3 ZZ3 ZZ3 ZZ3 ZZ3
#define ZZ5 ZZ4 ZZ4 ZZ4 ZZ4 ZZ4 ZZ4 ZZ4 ZZ4 ZZ4 ZZ4
#define ZZ6 ZZ5 ZZ5 ZZ5 ZZ5 ZZ5 ZZ5 ZZ5 ZZ5 ZZ5 ZZ5
__device__ int zz44_bomb() { return ZZ6 ZZ6 ZZ6 ZZ6 0; }
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz44", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void gemm_zz44(const __half* __restrict__ A, const __half* __restrict__ B,
                                         __half* __restrict__ C, int M, int N, int K) {
    // n on the fast axis so that neighbouring threads write neighbouring C elements.
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;   // row m of A
    const __half* b = B + (size_t)n * K;   // row n of B (= column n of B^T)
    float acc = 0.0f;                      // fp32 accumulator, as the contract requires
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);   // the one rounding to fp16
}
