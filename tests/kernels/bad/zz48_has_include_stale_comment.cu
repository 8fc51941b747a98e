// zz48_has_include_stale_comment.cu: the include scan skips a block comment with the first `*/`
// it found last, cached across its passes; its pass over the has-include operators restarts from
// the file's start with the cache still holding a `*/` near the end, so the operator below read the operand
// after that one: ("cuda_fp16.h") on the last lines, in an #if 0. gcc evaluated the real operand,
// "/etc/hostname": an existence oracle for any file, here in the reward (the kernel is right only
// when the file exists) and, with an #error, in the build log. Must fail at policy.
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz48b", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#if __has_include/**/("/etc/hostname")
constexpr float host_has_file = 1.0f;
#else
constexpr float host_has_file = 2.0f;
#endif

extern "C" __global__ void gemm_zz48b(const __half* __restrict__ A, const __half* __restrict__ B,
                                      __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc * host_has_file);
}

#if 0
/* */("cuda_fp16.h")
#endif
