// zz49_cccl_pragma_oracle.cu: libcu++ (cuda/std/*, allowed) defines _CCCL_PRAGMA(x) as the pragma
// operator on #x, and _CCCL_HAS_INCLUDE(x) as the has-include test on x. The policy checks those two
// only where a kernel file spells them, and through these wrappers it spelled neither: the #if
// below chose the kernel by whether a host file exists (C[0] is doubled when it does not; the build
// passed either way), and the pragma opened the file (a FIFO blocks the build) and warned "cannot
// find source file" in the build log when it was absent. Must fail at policy.
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz49", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cuda/std/cstdint>

#if _CCCL_HAS_INCLUDE("/etc/hostname")
#define ZZ49_HOST acc
#else
#define ZZ49_HOST (2.0f * acc)
#endif
_CCCL_PRAGMA(GCC dependency "/etc/hostname")

extern "C" __global__ void gemm_zz49(const __half* __restrict__ A, const __half* __restrict__ B,
                                     __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(m == 0 && n == 0 ? ZZ49_HOST : acc);
}
