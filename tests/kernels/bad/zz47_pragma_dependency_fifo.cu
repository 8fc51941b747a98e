// zz47_pragma_dependency_fifo.cu: `#pragma GCC dependency` names any file. The preprocessor opens
// it: the build fails ("No such file or directory") when it does not exist and passes when it does,
// an existence oracle with the answer in the reward, and a warning when it is newer than the source;
// on a FIFO the compiler blocked until the build's timeout, a build slot stalled per candidate.
// Here the pragma is built with _Pragma and stringizing, so no directive line names it. Must fail
// at policy (only loop and diagnostic pragmas; _Pragma with one plain string).
#define ZZ47_S(x) #x
_Pragma(ZZ47_S(GCC dependency "/etc/passwd"))
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz47", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void gemm_zz47(const __half* __restrict__ A, const __half* __restrict__ B,
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
