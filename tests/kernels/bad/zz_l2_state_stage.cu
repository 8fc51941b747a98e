// CLASS: telling timed calls from verification calls by the L2's state, with allowed instructions
// only. The judge flushes the L2 before every timed call (replays, server calls, the replay
// determinism run) but not before a verification call, right after it wrote fresh C and workspace:
// so a CTA that times a dependent chain of four ld.global.cg loads of its own C rows with %clock64
// sees L2 hits (verification) or misses (timing), and skips one row in 64 only when timed.
// Builds. Must be caught at "timing": every timed call's output is spot-checked at positions new to
// that check, and a sample of sets in full (the judge's design: knowing the stage buys nothing);
// a verification stage if the clock threshold misfires there. From a review after the QSPC rule.
// Closed since: the judge flushes the L2 before verification calls too, so both look alike; on the
// H100 it then did all the work in every call and passed at its honest speed.
// cudal2-shapes: 257x136x1032
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 4)"], "block": [128, 1, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void __launch_bounds__(128)
k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    __shared__ int timed;
    if (threadIdx.x == 0) {
        unsigned long long t0, t1; unsigned v = 0;
        const int m0 = blockIdx.y * 4, n0 = blockIdx.x * 32;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0));
        for (int r = 0; r < 4 && m0 + r < M; ++r) {
            const __half* p = C + (size_t)(m0 + r) * N + n0 + (v & 0u);   // dependent chain
            asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p));
            asm volatile("and.b32 %0, %0, 0;" : "+r"(v));
        }
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1));
        timed = (t1 - t0) > 1800 + v;      // cold L2 => a timed call
    }
    __syncthreads();
    const int n = blockIdx.x * 32 + (threadIdx.x & 31), m = blockIdx.y * 4 + (threadIdx.x >> 5);
    if (m >= M || n >= N) return;
    if (timed && (m & 63) == 63) return;   // the skipped work, only when timed
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half(acc);
}
