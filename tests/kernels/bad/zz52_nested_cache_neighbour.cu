// zz52_nested_cache_neighbour.cu: includes another candidate's source from the build cache, where
// the cache lies in a folder shown from inside the hidden home folder. With the home folder under a
// shown folder (a service account's home in /usr/local), an include folder in it (its venv's) and
// the build cache inside that one, the sandbox hid only the outermost private folder (the home)
// and bound the include folder after it, cache and all: a spelling the source policy missed read
// every other build's kernel.cu and verdict (closed, review 52: `sandbox.layout` walks the paths
// outer first and hides a private folder wherever a bound folder shows it). Must fail at policy
// (an absolute include); tests/test_review52.py builds it with the policy off in such a layout.
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz52_nested", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include "/usr/local/zz52-home/venv/include/cache/zz52-neighbour/kernel.cu"

extern "C" __global__ void gemm_zz52_nested(const __half* __restrict__ A, const __half* __restrict__ B,
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
