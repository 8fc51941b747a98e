// zz45_compiler_output_flood.cu: the compiler's output as the weapon. A function is declared
// deprecated with a 64 KiB message built by macros, and 13 doubling macros use it 8192 times: the
// front end prints the message twice for each use (the warning and the note quoting the
// declaration), ~1 GB of diagnostics within the build's timeout. The build read the compiler's
// whole output into the judge's memory (the reward service's, beside the trainer's), then again as
// text, then wrote it all into the build cache's build.log. (The first version printed 64 KiB
// pragma-operator message remarks; a pragma operator with a computed string is refused at policy now.) Must fail
// at build, with the compiler killed at the output limit.
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
[[deprecated(ZZ45_XS(ZZ45_T9))]] __device__ int zz45_old(int x) { return x + 1; }
#define ZZ45_U0 x = zz45_old(x);
#define ZZ45_U1 ZZ45_U0 ZZ45_U0
#define ZZ45_U2 ZZ45_U1 ZZ45_U1
#define ZZ45_U3 ZZ45_U2 ZZ45_U2
#define ZZ45_U4 ZZ45_U3 ZZ45_U3
#define ZZ45_U5 ZZ45_U4 ZZ45_U4
#define ZZ45_U6 ZZ45_U5 ZZ45_U5
#define ZZ45_U7 ZZ45_U6 ZZ45_U6
#define ZZ45_U8 ZZ45_U7 ZZ45_U7
#define ZZ45_U9 ZZ45_U8 ZZ45_U8
#define ZZ45_U10 ZZ45_U9 ZZ45_U9
#define ZZ45_U11 ZZ45_U10 ZZ45_U10
#define ZZ45_U12 ZZ45_U11 ZZ45_U11
#define ZZ45_U13 ZZ45_U12 ZZ45_U12
__device__ int zz45_uses(int x) { ZZ45_U13 return x; }   // never called: the front end warns anyway
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
