// CHEAT CLASS: keeping operands in the L2 across the harness's flush -- an evict_last cache policy.
// What it tries: every load of B goes through `ld.global.L2::cache_hint` with a policy made by
// `createpolicy.fractional.L2::evict_last` (fraction 1.0), so B's lines are marked to be evicted
// last. The harness flushes the L2 before each replay by writing a buffer larger than the L2
// (`flush.fill(0)`); evict_last lines may be the ones that survive that flush (the policy is a
// hint to the replacement, and nothing resets it), and for an input set whose B stays resident
// the next replay reads it from L2 instead of HBM. The arithmetic is an honest naive GEMM with
// fp32 accumulation: outputs are exactly right.
// Why it would earn an undeserved score: on memory-bound shapes (small M, large N*K) the time is
// B's traffic; lines that outlive the flush make later replays faster than a cold call really
// is, while the baselines pay full HBM cost.
// Defence that stops it: `timing.flush_l2` reads its 2x-L2 buffer with an evict_last policy of
// its own (displacing every line of that class), discards those lines, then writes the buffer.
// Measured on the H100 (eval/judge_v2.py l2probe, 24 MiB read after the flush): evict_last lines
// did survive the old plain write (12.9 us against 15.2 us cold, 10.8 us hot); after flush_l2 the
// read is cold (15.2 us).
// Naive kernel: speedup far below 1 on the test shape whatever the cache does.
/* cudal2-launch
{
  "kernels": [
    {"name": "evict_last_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

__device__ __forceinline__ unsigned short ld_evict_last(const __half* p, unsigned long long pol) {
    unsigned short v;
    asm volatile("ld.global.L2::cache_hint.b16 %0, [%1], %2;" : "=h"(v) : "l"(p), "l"(pol));
    return v;
}

extern "C" __global__ void evict_last_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                           __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(__ushort_as_half(ld_evict_last(b + k, pol))), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
