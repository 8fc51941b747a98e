// zz49_computed_include_macro.cu: an allowed CUTLASS header does a computed include,
// `#include CUDA_STD_HEADER(cassert)` (cutlass/predicate_vector.h), and the macro's argument is
// macro-expanded like any: a kernel file that defines `cassert` as a path before the #include makes
// the header include that path. The policy read the file's own directives (all literal, allowed
// headers) and its #define (no `#`, no file); gcc then opened
// cccl/cuda/std/../../../../../../../../../../etc/hostname, and the host's name came back in the build
// log ("this declaration has no storage class or type specifier"), the same for any file the compiler
// can open (a FIFO blocks it). Must fail at policy.
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz49", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define cassert ../../../../../../../../../../../../etc/hostname
#include <cutlass/predicate_vector.h>
#undef cassert
#define ZZ49_HOST 1.0f

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
