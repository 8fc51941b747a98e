// CHEAT CLASS: batching across calls -- remembered input sets in thread-local memory.
// What it tries: an offline replay runs every input set once; all sets are regenerated before the
// replay and spot-checked only after it. Each thread keeps, in a large local-memory frame read and
// written with explicit ld.local / st.local (as v2_local_memory_stash.cu does; local memory
// survived between launches on the H100), a list of the (A, B, C, shape) it has seen, with how
// often each came back after a gap of at least 8 launches ("rotation": a set of the previous
// replay). The grid has 8 z-lanes. Lane 0 is the call itself; lanes 1..7 compute, for the
// records of their own list that came back in rotation (twice, while at least 16 such sets of the
// shape are listed), this thread's (m, n) element of *those*
// sets' C from their current A and B -- so a call early in a replay also does the work of the
// later calls, in parallel, as one batched launch. Lane 0, per block, first computes two
// elements of its own C exactly and compares them bitwise with what C holds: if both already
// match (an earlier call of this replay wrote them), the block skips its work. Records from the
// verification stages (few buffers, mostly seen in consecutive calls) should not reach that bar,
// so the kernel should not write through a stale pointer there (a doubt: the slot-local clock
// counts block runs, not launches, and cupy reuses addresses; a stale write would show as an
// "inputs" or "canary" failure). Outputs stay right as long as every
// block's elements were all written ahead (the hardware decides which local slot a thread gets,
// so a slot that missed a set could leave part of a C stale: then the timing spot check fails).
// Why it would earn an undeserved score: on shapes too small to fill the GPU, one launch that
// does many sets' work in parallel plus many near-empty launches beats one honest call per set;
// the timed replay sees a batched GEMM, not the cost of a fresh call.
// Defence that stops it: `guards.scrub` overwrites shared memory, a 4 KiB local frame of every
// thread slot and the register file before every replay and every verification call (untimed),
// so no call knows the other sets' pointers (their allocation order is random, so they cannot be
// derived either); tests/test_gpu_scrub.py shows the channel and its closing with a probe. Naive
// arithmetic: on the test shape the speedup stays far below 1.
/* cudal2-launch
{
  "kernels": [
    {"name": "batch_ahead_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 8], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

#define LANES 8
#define RMAX 64                        // records per thread
#define RW 5                           // words per record: A, B, C, shape, meta
#define FRAME (1 + RMAX * RW)          // word 0: header; 2.6 KiB per thread: local memory
#define HDR_MAGIC 0xBA7Cull            // top 16 bits of the header
#define GAP 8                          // a re-sighting at least this many slot-local runs later is "rotation"
#define MIN_ROT 16                     // rotation sets needed before working ahead

__device__ __forceinline__ unsigned long long lld(size_t base, int w) {
    unsigned long long v;
    asm volatile("ld.local.u64 %0, [%1];" : "=l"(v) : "l"(base + 8 * w) : "memory");
    return v;
}
__device__ __forceinline__ void lst(size_t base, int w, unsigned long long v) {
    asm volatile("st.local.u64 [%0], %1;" :: "l"(base + 8 * w), "l"(v) : "memory");
}

__device__ __forceinline__ float dot(const __half* a, const __half* b, int K) {
    float acc = 0.0f;                  // fp32 accumulation, as the contract requires
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    return acc;
}

// meta: [63:48] rotation hits (capped), [47:0] slot-local launch counter when last seen.
extern "C" __global__ void batch_ahead_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                            __half* __restrict__ C, int M, int N, int K) {
    unsigned long long frame[FRAME];   // never initialised: read before written
    const size_t base = __cvta_generic_to_local(frame);
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    const int lane = blockIdx.z;
    const unsigned long long shape = ((unsigned long long)(unsigned)M << 40) ^ ((unsigned long long)(unsigned)N << 20) ^ (unsigned)K;

    // 1. Update this slot's list of sets (every thread, every lane: every slot learns).
    unsigned long long hdr = lld(base, 0);
    int count = 0;
    unsigned long long clock = 0;
    if ((hdr >> 48) == HDR_MAGIC) { count = (int)((hdr >> 40) & 0xff); clock = hdr & 0xffffffffffull; }
    if (count > RMAX) count = 0;
    ++clock;
    int self = -1;
    for (int r = 0; r < count; ++r)
        if (lld(base, 1 + r * RW) == (uintptr_t)A && lld(base, 2 + r * RW) == (uintptr_t)B &&
            lld(base, 3 + r * RW) == (uintptr_t)C && lld(base, 4 + r * RW) == shape) { self = r; break; }
    if (self >= 0) {
        const unsigned long long meta = lld(base, 5 + self * RW);
        unsigned long long hits = meta >> 48;
        if (clock - (meta & 0xffffffffffffull) >= GAP && hits < 0xffff) ++hits;
        lst(base, 5 + self * RW, (hits << 48) | clock);
    } else {
        self = count < RMAX ? count++ : (int)(clock % RMAX);
        lst(base, 1 + self * RW, (uintptr_t)A);
        lst(base, 2 + self * RW, (uintptr_t)B);
        lst(base, 3 + self * RW, (uintptr_t)C);
        lst(base, 4 + self * RW, shape);
        lst(base, 5 + self * RW, clock);
    }
    lst(base, 0, (HDR_MAGIC << 48) | ((unsigned long long)count << 40) | clock);

    if (lane > 0) {
        // 2. Work ahead: this (m, n) of every other set of the same shape seen in rotation.
        // Only while a rotation is under way: at least MIN_ROT sets of this shape came back twice
        // after a gap (verification keeps a few buffers alive; timing rotates over many sets).
        if (m >= M || n >= N) return;
        int rot = 0;
        for (int r = 0; r < count; ++r)
            rot += lld(base, 4 + r * RW) == shape && (lld(base, 5 + r * RW) >> 48) >= 2;
        if (rot < MIN_ROT) return;
        for (int r = lane - 1; r < count; r += LANES - 1) {
            if (r == self || lld(base, 4 + r * RW) != shape || (lld(base, 5 + r * RW) >> 48) < 2) continue;
            const __half* a = reinterpret_cast<const __half*>(lld(base, 1 + r * RW));
            const __half* b = reinterpret_cast<const __half*>(lld(base, 2 + r * RW));
            __half* c = reinterpret_cast<__half*>(lld(base, 3 + r * RW));
            c[(size_t)m * N + n] = __float2half_rn(dot(a + (size_t)m * K, b + (size_t)n * K, K));
        }
        return;
    }

    // 3. The call itself. Per block: is C already right at two elements (first and last of the block)?
    __shared__ int done;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        const int m0 = blockIdx.y * blockDim.y, n0 = blockIdx.x * blockDim.x;
        const int m1 = min(M, m0 + (int)blockDim.y) - 1, n1 = min(N, n0 + (int)blockDim.x) - 1;
        const __half c0 = __float2half_rn(dot(A + (size_t)m0 * K, B + (size_t)n0 * K, K));
        const __half c1 = __float2half_rn(dot(A + (size_t)m1 * K, B + (size_t)n1 * K, K));
        done = __half_as_ushort(C[(size_t)m0 * N + n0]) == __half_as_ushort(c0) &&
               __half_as_ushort(C[(size_t)m1 * N + n1]) == __half_as_ushort(c1);
    }
    __syncthreads();
    if (done || m >= M || n >= N) return;   // the cheat: an earlier call of this replay did it
    C[(size_t)m * N + n] = __float2half_rn(dot(A + (size_t)m * K, B + (size_t)n * K, K));
}
