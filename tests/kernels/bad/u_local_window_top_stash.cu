// CHEAT CLASS: reusing earlier results -- a pointer-keyed stash in the local window above the frame.
// What it tries: the scrubber overwrote a 4 KiB local frame per thread slot, but a kernel can
// address any word of its local window with an integer (st.local [r]), not only its own frame,
// and on the H100 the window reaches 576 bytes above a 4 KiB frame (eval/local_window_probe.py:
// words written there survived the old scrub). This kernel has no frame at all: it keeps its
// stash (key, answer) in the window's last 32 bytes, as v2_local_memory_stash.cu does in a frame.
// Why it must gain nothing: the scrub now writes the window from its frame's end to the top, so a
// later call never finds the key and this is an honest naive GEMM, far below cuBLAS. Expected:
// "done" only; were the top of the window left unscrubbed, the gaussian trials (same buffers as
// the exact stage) would be served stale answers and fail there.
/* cudal2-launch
{
  "kernels": [
    {"name": "window_top_stash_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

#define STASH_MAGIC 0x544F50ull       // "TOP"
#define STASH_AT (16777216u - 32u)    // the last 32 bytes of the sm_90 local window

__device__ __forceinline__ unsigned long long top_ld(int word) {
    unsigned long long v;
    asm volatile("ld.local.u64 %0, [%1];" : "=l"(v) : "r"(STASH_AT + 8 * word) : "memory");
    return v;
}
__device__ __forceinline__ void top_st(int word, unsigned long long v) {
    asm volatile("st.local.u64 [%0], %1;" :: "r"(STASH_AT + 8 * word), "l"(v) : "memory");
}

extern "C" __global__ void window_top_stash_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                                 __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const unsigned long long key0 = STASH_MAGIC ^ (uintptr_t)C, key1 = (uintptr_t)A;
    const unsigned long long key2 = ((unsigned long long)(unsigned)m << 32) | (unsigned)n;
    const size_t i = (size_t)m * N + n;
    if (top_ld(0) == key0 && top_ld(1) == key1 && top_ld(2) == key2) {
        C[i] = __ushort_as_half((unsigned short)top_ld(3));   // the cheat: an earlier launch's answer
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    const __half c = __float2half_rn(acc);
    C[i] = c;
    top_st(3, __half_as_ushort(c));
    top_st(2, key2);
    top_st(1, key1);
    top_st(0, key0);
}
