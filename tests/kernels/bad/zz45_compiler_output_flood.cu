// zz45_compiler_output_flood.cu: the compiler's output as the weapon. Each _Pragma(message) below
// carries a 64 KiB message built by macros, and 13 doubling macros make 8192 of them: cicc prints
// each as a remark, with its line, ~1.6 GB of diagnostics within the build's timeout (27 MB/s a
// build, one build a core). The build read the compiler's whole output into the judge's memory (the
// reward service's, beside the trainer's), then again as text, then wrote it all into the build
// cache's build.log. Must fail at build, with the compiler killed at the output limit.
#define ZZ45_T0 ZZ45_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
#define ZZ45_T1 ZZ45_T0 ZZ45_T0
#define ZZ45_T2 ZZ45_T1 ZZ45_T1
#define ZZ45_T3 ZZ45_T2 ZZ45_T2
#define ZZ45_T4 ZZ45_T3 ZZ45_T3
#define ZZ45_T5 ZZ45_T4 ZZ45_T4
#define ZZ45_T6 ZZ45_T5 ZZ45_T5
#define ZZ45_T7 ZZ45_T6 ZZ45_T6
#define ZZ45_T8 ZZ45_T7 ZZ45_T7
#define ZZ45_T9 ZZ45_T8 ZZ45_T8
#define ZZ45_S(x) #x
#define ZZ45_XS(x) ZZ45_S(x)
#define ZZ45_P0 _Pragma(ZZ45_XS(message(ZZ45_XS(ZZ45_T9))))
#define ZZ45_P1 ZZ45_P0 ZZ45_P0
#define ZZ45_P2 ZZ45_P1 ZZ45_P1
#define ZZ45_P3 ZZ45_P2 ZZ45_P2
#define ZZ45_P4 ZZ45_P3 ZZ45_P3
#define ZZ45_P5 ZZ45_P4 ZZ45_P4
#define ZZ45_P6 ZZ45_P5 ZZ45_P5
#define ZZ45_P7 ZZ45_P6 ZZ45_P6
#define ZZ45_P8 ZZ45_P7 ZZ45_P7
#define ZZ45_P9 ZZ45_P8 ZZ45_P8
#define ZZ45_P10 ZZ45_P9 ZZ45_P9
#define ZZ45_P11 ZZ45_P10 ZZ45_P10
#define ZZ45_P12 ZZ45_P11 ZZ45_P11
#define ZZ45_P13 ZZ45_P12 ZZ45_P12
ZZ45_P13
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz45", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void gemm_zz45(const __half* __restrict__ A, const __half* __restrict__ B,
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
