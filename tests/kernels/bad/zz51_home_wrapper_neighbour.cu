// zz51_home_wrapper_neighbour.cu: includes another candidate's source from the build cache. With
// nvcc on PATH as a wrapper script in ~/bin (or ~/.local/bin), the sandbox bound "the prefix of nvcc
// itself", the wrapper's folder's parent: the home folder, read-only, build cache and all, so a
// spelling the source policy missed read any file there: ~/.ssh, tokens, every other build's
// kernel.cu and verdict (closed, review 51: the sandbox shows the nvcc, ptxas and gcc programs
// themselves, not their folders' parents, takes gcc's prefix from gcc, and hides the home folder and
// the build cache wherever a shown folder holds them). Must fail at policy (an absolute include);
// tests/test_review51.py builds it with the policy off through such a wrapper.
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz51_neighbour", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include "/root/.cache/cudal2/build/zz51-neighbour/kernel.cu"

extern "C" __global__ void gemm_zz51_neighbour(const __half* __restrict__ A, const __half* __restrict__ B,
                                               __half* __restrict__ C, int M, int N, int K) {
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
