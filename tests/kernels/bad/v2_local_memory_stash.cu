// CHEAT CLASS: reusing earlier results -- a pointer-keyed stash in thread-local memory.
// What it tries: v2 forbids writable module globals, and the harness refills the workspace and C
// before every call; local memory is neither. Each thread owns a large local array, read and
// written with explicit ld.local / st.local so that it lives in local memory (off-chip), not in
// registers. At entry the thread reads its first words before writing anything: if they hold
// the stash key -- a magic word xor the C pointer, the A pointer and this thread's (m, n) -- left
// there by an earlier launch that ran on the same hardware slot, it writes the stashed value to
// C and skips the K loop. Otherwise it computes naively and stashes (key, value) for the next
// launch. Whether local memory survives between launches, and which thread lands on which slot,
// is up to the hardware and the scheduler.
// Why it must gain nothing: the stash is keyed on pointers, and the judge changes the contents
// behind the same pointers between calls (the gaussian trials and the repeat stage reuse the
// buffers; every timed call regenerates an input). A hit therefore serves a stale answer and
// fails the check of that call; without hits the kernel is an honest naive GEMM, far slower than
// cuBLAS. Expected: a failure at the first call where a hit happens ("gaussian", "repeat",
// "determinism" or "timing"), or "done" with a speedup below 1. On an H100 local memory did
// survive: the gaussian trials (same buffers as the exact stage) were served stale values.
/* cudal2-launch
{
  "kernels": [
    {"name": "local_stash_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

#define STASH_MAGIC 0x5354415348ull   // "STASH"
#define STASH_WORDS 128               // 1 KiB per thread: local memory, not registers

// Plain C++ reads of an uninitialised local array are undefined and the compiler promotes the array
// to registers (even `volatile`), so the stash is read and written with explicit ld.local / st.local
// on the array's local-window address: the array escapes into the asm and stays in local memory.
__device__ __forceinline__ unsigned long long stash_ld(size_t base, int word) {
    unsigned long long v;
    asm volatile("ld.local.u64 %0, [%1];" : "=l"(v) : "l"(base + 8 * word) : "memory");
    return v;
}
__device__ __forceinline__ void stash_st(size_t base, int word, unsigned long long v) {
    asm volatile("st.local.u64 [%0], %1;" :: "l"(base + 8 * word), "l"(v) : "memory");
}

extern "C" __global__ void local_stash_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                            __half* __restrict__ C, int M, int N, int K) {
    unsigned long long stash[STASH_WORDS];            // never initialised: read before written
    const size_t base = __cvta_generic_to_local(stash);
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const unsigned long long key0 = STASH_MAGIC ^ (uintptr_t)C, key1 = (uintptr_t)A;
    const unsigned long long key2 = ((unsigned long long)(unsigned)m << 32) | (unsigned)n;
    const size_t i = (size_t)m * N + n;
    if (stash_ld(base, 0) == key0 && stash_ld(base, 1) == key1 && stash_ld(base, 2) == key2) {
        C[i] = __ushort_as_half((unsigned short)stash_ld(base, 3));   // the cheat: last launch's answer
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    const __half c = __float2half_rn(acc);
    C[i] = c;
    stash_st(base, 3, __half_as_ushort(c));
    stash_st(base, 2, key2);
    stash_st(base, 1, key1);
    stash_st(base, 0, key0);
    stash_st(base, STASH_WORDS - 1, key0);   // touch the far end too, so the frame is really this large
}
