// state_probe_v2.cu: an honest naive GEMM that also looks for what an earlier launch left on the
// chip, and ruins its own output when it finds it. It tests the judge's scrubbers
// (tests/test_gpu_scrub.py), not the judge: two launches back to back must show the channels
// exist (the second output is wrong), and a scrub between them must close them (it is right).
// It is not a judge control: inside one timed replay the calls run back to back by design (the
// scrub runs between replays, untimed), so this probe would flag itself there.
// How it looks: every thread keeps a marker (a magic word and a tag of this call: C's address,
// the shape and the first elements of A and B) in a local-memory frame, and thread 0 of every
// block keeps one at the end of a 48 KiB dynamic shared-memory allocation. Before writing its
// own, each reads what the slot holds; a magic word with another call's tag means a value
// survived from an earlier launch, and the thread adds 1 to its output (a wrong answer).
// Blocks of the same call share the tag, so they never count as stale for each other.
/* cudal2-launch
{
  "kernels": [
    {"name": "state_probe_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "smem": 49152, "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define MAGIC 0x5CA1AB1Eu
#define FRAME 64   // words of local memory per thread

// Plain reads of an uninitialised local array are undefined (the compiler promotes it to
// registers, even when volatile), so the frame is read and written with ld.local / st.local in
// volatile asm through its local-space address (ptxas may not drop those), which keeps it in
// local memory. (Not through its generic address: that is formed from the local window's base,
// which the judge refuses.)
__device__ __forceinline__ unsigned lld(unsigned base, int word) {
    unsigned v;
    asm volatile("ld.local.u32 %0, [%1];" : "=r"(v) : "r"(base + 4 * word) : "memory");
    return v;
}
__device__ __forceinline__ void lst(unsigned base, int word, unsigned v) {
    asm volatile("st.local.u32 [%0], %1;" :: "r"(base + 4 * word), "r"(v) : "memory");
}

extern "C" __global__ void state_probe_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                            __half* __restrict__ C, int M, int N, int K) {
    extern __shared__ unsigned smem[];
    unsigned frame[FRAME];   // never initialised: read before it is written
    const unsigned base = (unsigned)__cvta_generic_to_local(frame);
    const unsigned tag = (unsigned)(size_t)C ^ ((unsigned)M * 2654435761u) ^ ((unsigned)N << 7) ^ (unsigned)K
                         ^ ((unsigned)__half_as_ushort(A[0]) << 16) ^ (unsigned)__half_as_ushort(B[0])
                         ^ ((unsigned)__half_as_ushort(A[K - 1]) << 3);
    float stale = 0.0f;
    // Local memory: the last two words of the frame (what a stash would use).
    if (lld(base, FRAME - 2) == MAGIC && lld(base, FRAME - 1) != tag) stale = 1.0f;
    lst(base, FRAME - 2, MAGIC);
    lst(base, FRAME - 1, tag);
    // Shared memory: the last two words of the allocation, read by one thread per block.
    volatile unsigned* s = smem + 49152 / 4 - 2;
    __shared__ float block_stale;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        block_stale = (s[0] == MAGIC && s[1] != tag) ? 1.0f : 0.0f;
        s[0] = MAGIC;
        s[1] = tag;
    }
    __syncthreads();
    stale += block_stale;

    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc + stale);
}
