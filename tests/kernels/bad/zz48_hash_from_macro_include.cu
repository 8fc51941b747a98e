// zz48_hash_from_macro_include.cu: nvcc preprocesses a .cu file with the host gcc (-E) and hands
// the output, a .ii file, to cicc, whose EDG front end preprocesses it again. A `#` token that a
// macro expansion puts at the start of an output line is text to gcc but a directive to cicc, so
// `#define` P `# include "..."` reads any file the compiler can open, with no directive line that
// names it: the policy saw only a #define. Here the host's /proc/sys/kernel/pid_max is compiled
// into the kernel (its number lands in C[0]); the same spelling put /etc/hostname's first token
// into the build log ("identifier "vm" is undefined"), and blocks on a FIFO. Must fail at policy.
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz48", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define HOST_FILE # include "/proc/sys/kernel/pid_max"
constexpr int host_number =
HOST_FILE
;

extern "C" __global__ void gemm_zz48(const __half* __restrict__ A, const __half* __restrict__ B,
                                     __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(m == 0 && n == 0 ? (float)host_number : acc);
}
