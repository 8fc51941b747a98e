// CHEAT CLASS: detecting the timing phase from pointer alignment alone, then dropping a property
// (bitwise determinism) that only verification checks.
// What it tries: the judge takes care that no *content* tells a verification call from a timed
// one (random guard bytes and spacers, same input distributions, fresh workspace and C). But the
// *addresses* differ in kind: every verification buffer is a buffers.Guarded, whose data starts
// at raw + guard_bytes (65536) inside its allocation, while a timing set's A, B and C are plain
// cp.empty allocations of exactly 2*M*K, 2*N*K, 2*M*N bytes: at shapes where these are a few MiB
// or more they come straight from cudaMalloc (or re-use a freed chunk from its start) and are
// 2 MiB aligned. A Guarded pointer is 2 MiB aligned only if its raw allocation starts 64 KiB
// before a 2 MiB boundary, which a fresh cudaMalloc never does. So the kernel reads no memory at
// all to decide: "A, B and C all 2 MiB aligned" means a timed call, anything else a checked one
// (when unsure it is honest, so a wrong guess costs nothing).
// In checked calls it computes split-K deterministically: 4 K-slices write partials to the
// workspace and a finish kernel sums them in a fixed order. In timed calls it zeroes one fp32
// plane and the 4 slices atomicAdd into it: the order of the additions, and so the low bits of C,
// vary from call to call.
// Why it would earn an undeserved score: the determinism stage runs only in verification; timing
// checks values (spot checks, full checks of a sample of sets at the end) with tolerances that fp32
// atomics meet easily, but never compares two timed calls bitwise. A real kernel gains what a
// deterministic stream-K/split-K fix-up costs (partials round-trip through memory, a semaphore-
// ordered or separate reduction) at the small-M / large-K shapes where split-K matters. The same
// oracle unlocks anything that only the per-call checks of verification catch: writes outside C
// in timing land in unguarded spacers (timing sets have no guard regions), and writes into the
// fixed operand are caught only once timing is over.
// Defence that should stop it: none today that I can see (expected stage: "done"; this naive
// kernel's speedup stays below 1). Suggested: allocate timing sets through the same Guarded
// allocator (same offset inside an allocation, or random 256-byte-multiple offsets everywhere),
// and/or compare two timed calls of one set on identical inputs bitwise (e.g. re-run the final
// replay's first set and compare).
// Doubts: the 2 MiB alignment of timing buffers depends on the cupy pool (a set split from a freed
// larger chunk, e.g. the previous candidate's flush buffer, is not aligned; small shapes are
// sub-allocated) -- then the kernel is simply honest there. Determinism lost in timing may be
// judged a contract matter rather than a speed cheat; the speed payoff of atomics is modest.
/* cudal2-launch
{
  "workspace": "4 * M * N * 4",
  "kernels": [
    {"name": "phase_zero", "grid": ["cdiv(M * N, 256)"], "block": [256],
     "args": ["A", "B", "C", {"ws": 0}, {"int": "M * N"}]},
    {"name": "phase_partial", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 4], "block": [32, 8, 1],
     "args": ["A", "B", "C", {"ws": 0}, "M", "N", "K"]},
    {"name": "phase_finish", "grid": ["cdiv(M * N, 256)"], "block": [256],
     "args": ["A", "B", "C", {"ws": 0}, {"int": "M * N"}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

#define SLICES 4
#define ALIGN_2M 0x1FFFFFull

// No memory read: the stage follows from where the harness put the buffers.
__device__ __forceinline__ bool timed_call(const void* A, const void* B, const void* C) {
    return ((((uintptr_t)A) | ((uintptr_t)B) | ((uintptr_t)C)) & ALIGN_2M) == 0;
}

extern "C" __global__ void phase_zero(const __half* A, const __half* B, __half* C, float* P, int MN) {
    if (!timed_call(A, B, C)) return;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < MN) P[i] = 0.0f;
}

extern "C" __global__ void phase_partial(const __half* __restrict__ A, const __half* __restrict__ B,
                                         __half* __restrict__ C, float* P, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    const int z = blockIdx.z;
    if (m >= M || n >= N) return;
    const int chunk = (K + SLICES - 1) / SLICES;
    const int k0 = z * chunk, k1 = min(K, k0 + chunk);
    float acc = 0.0f;                      // fp32 accumulation, as the contract requires
    for (int k = k0; k < k1; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    const size_t i = (size_t)m * N + n;
    if (timed_call(A, B, C))
        atomicAdd(&P[i], acc);             // the cheat: order of the 4 additions varies
    else
        P[(size_t)z * M * N + i] = acc;    // deterministic partials
}

extern "C" __global__ void phase_finish(const __half* A, const __half* B, __half* C, const float* P, int MN) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= MN) return;
    float s;
    if (timed_call(A, B, C)) {
        s = P[i];
    } else {
        s = 0.0f;
        for (int z = 0; z < SLICES; ++z) s += P[(size_t)z * MN + i];
    }
    C[i] = __float2half_rn(s);
}
