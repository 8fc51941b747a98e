// zz46_ptx_comment_bomb.cu (review 46): stalling the reward service at build, in its own process.
// An inline asm statement of 4096 PTX comment lines (256 KiB, built by macros), in a loop that
// `#pragma unroll` copies 256 times under a branch never taken: nvcc writes 66 MB of PTX in under
// two seconds with little memory (the asm string is stored once), which the build read whole into
// the caller's process and scanned with the PTX rules' Python regexes, outside every timeout; at
// 2048 copies (528 MB) the build took 49 s and 1.6 GB of the caller's memory, and the kernel built
// and passed (comments assemble to nothing). Closed: a PTX over build.MAX_PTX_MB fails the build
// before it is read.
/* cudal2-launch
{
  "kernels": [
    {"name": "naive_gemm_v2", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define S4(x) x x x x
#define S16(x) S4(S4(x))
#define S256(x) S16(S16(x))
#define S4096(x) S16(S256(x))

__device__ __forceinline__ void pad() {
    asm volatile(S4096("//0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab\n"));
}

extern "C" __global__ void naive_gemm_v2(const __half* __restrict__ A, const __half* __restrict__ B,
                                         __half* __restrict__ C, int M, int N, int K) {
    if (K < 0) {   // never: K is positive
#pragma unroll
        for (int i = 0; i < 256; ++i) pad();
    }
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
