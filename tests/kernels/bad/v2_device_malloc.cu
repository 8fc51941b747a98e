// CHEAT CLASS: device-side allocation -- malloc/free from the device heap for scratch.
// What it tries: each thread allocates a K-float scratch row on the device heap, converts its A
// row into it, computes from it and frees it. Device-heap allocation is state outside the
// workspace the harness sizes and refills, can fail or leak between calls, and its size limit is
// a context setting the harness does not own. The call is spelled through a macro, so no
// `malloc(` appears at the call (it once token-pasted the name; pasting is now refused at policy).
// Why the judge must reject it: the v2 cubin may not have unresolved symbols; device malloc and
// free are external functions the driver links at load time (UND `malloc`, `free` in the cubin's
// symbol table), whatever the source spells. Expected stage: "build".
/* cudal2-launch
{
  "kernels": [
    {"name": "heap_scratch_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstddef>

#define HEAP_GET(bytes) malloc(bytes)
#define HEAP_PUT(p) free(p)

extern "C" __global__ void heap_scratch_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                             __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float* row = static_cast<float*>(HEAP_GET((size_t)K * sizeof(float)));
    float acc = 0.0f;
    if (row) {
        for (int k = 0; k < K; ++k) row[k] = __half2float(A[(size_t)m * K + k]);
        for (int k = 0; k < K; ++k) acc = fmaf(row[k], __half2float(B[(size_t)n * K + k]), acc);
        HEAP_PUT(row);
    } else {
        for (int k = 0; k < K; ++k)
            acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    }
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
