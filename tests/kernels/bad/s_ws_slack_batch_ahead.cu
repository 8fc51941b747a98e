// CHEAT CLASS: batching across calls -- other sets' pointers kept in device memory outside any
// allocation the harness looks after (the known open class: a stash that survives between offline
// replays), here in the allocator's rounding slack behind each workspace.
// What it tries: the spec asks for a workspace of M*N*4 + 256 bytes. buffers.Guarded allocates
// guard + workspace + guard = M*N*4 + 256 + 2*65536 bytes and the cupy pool rounds that up to a
// multiple of 512: the last 256 bytes of every workspace allocation, just past its after-guard,
// belong to no buffer. guards.prep randomizes only the workspace itself, Guarded.intact checks
// only the guards, scrub and flush_l2 touch on-chip state: the slack keeps what a call writes
// there for the whole timing stage. Each call writes a record into its own slack (self-keyed:
// magic xor the slack's address, then A, B, C, shape), reachable as ws + ws_bytes + guard.
// The timing workspaces are allocated one after another (`Ws = [Guarded(...) for ...]`, no
// spacers), equal in size, so they tend to sit at a constant stride in VA; a call walks that
// stride both ways from its own workspace, reading neighbours' slacks while the self-keyed
// record is there (one step past the last one reads whatever allocation follows: the flush
// buffer, or a set buffer), and so learns, from the eager pass on, every other set's A, B and C.
// The grid has 8 z-lanes: lane 0 is the call; lanes 1..7 compute the neighbours' whole C from
// their *current* A and B (all sets are regenerated before a replay starts, and checked only
// after it, so computing ahead is correct). A trailing one-thread kernel then marks each
// neighbour's slack with an epoch word: a hash of the first 8 halves of its A and of B. A call
// whose own slack carries the epoch of its current inputs returns at once: the next prep
// regenerates A, so a stale mark never matches. Work-ahead only when at least 8 neighbours of
// the same shape answer (verification has one workspace alive at a time).
// Why it would earn an undeserved score: the timed replay becomes one batched launch plus many
// near-empty ones; on shapes too small to fill the GPU that beats one honest call per set.
// Defence that should stop it: none today that I can see (expected stage: "done", speedup below
// 1 with this naive arithmetic). Suggested: allocate every buffer the candidate can address with
// its size rounded up to the pool's granularity and guard/randomize the whole allocation (or
// place workspaces at random offsets inside fresh, larger allocations with random gaps, and check
// the slack/spacers after timing), and randomize the memory between allocations too.
// Doubts: the constant stride depends on cudaMalloc placing consecutive equal allocations
// contiguously and on the pool not re-using freed chunks for some of them (the verification
// workspace of the same size is freed just before and will be re-used for one Ws, breaking the
// chain once); the one read past the chain's end faults (illegal address, fails "timing") if
// nothing is mapped there. If M*N*4 is not a multiple of 512 the slack moves; this file assumes
// it is. Not run on a GPU.
/* cudal2-launch
{
  "workspace": "M * N * 4 + 256",
  "kernels": [
    {"name": "slack_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 8], "block": [32, 8, 1],
     "args": ["A", "B", "C", {"ws": 0}, "M", "N", "K"]},
    {"name": "slack_mark", "grid": [1], "block": [1],
     "args": ["A", "B", "C", {"ws": 0}, "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

typedef unsigned long long u64;
#define LANES 8
#define GUARD 65536ull
#define MAGIC 0x534C41434B5F3031ull    // "SLACK_01"
#define MAX_WALK 64
#define MIN_NEIGHBOURS 8
// record words: [0] MAGIC ^ address of the record, [1] A, [2] B, [3] C, [4] shape, [5] epoch

__device__ __forceinline__ u64 shape_of(int M, int N, int K) {
    return ((u64)(unsigned)M << 40) ^ ((u64)(unsigned)N << 20) ^ (unsigned)K;
}
__device__ __forceinline__ size_t ws_total(int M, int N) { return (size_t)M * N * 4 + 256; }
// The slack behind this workspace's after-guard.
__device__ __forceinline__ volatile u64* slack_of(const char* ws, int M, int N) {
    return (volatile u64*)(uintptr_t)(ws + ws_total(M, N) + GUARD);
}
// Distance between consecutive workspace allocations, if the pool places them back to back.
__device__ __forceinline__ long long stride_of(int M, int N) {
    return (long long)((ws_total(M, N) + 2 * GUARD + 511) / 512 * 512);
}
__device__ __forceinline__ bool is_record(volatile u64* r, u64 shape) {
    return r[0] == (MAGIC ^ (u64)(uintptr_t)r) && r[4] == shape;
}
__device__ __forceinline__ u64 epoch_of(const __half* a, const __half* b) {
    u64 h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 8; ++i) {
        h = (h ^ __half_as_ushort(a[i])) * 0x100000001B3ull;
        h = (h ^ __half_as_ushort(b[i])) * 0x100000001B3ull;
    }
    return h | 1ull;
}
__device__ __forceinline__ float dot(const __half* a, const __half* b, int K) {
    float acc = 0.0f;                  // fp32 accumulation, as the contract requires
    for (int k = 0; k < K; ++k) acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    return acc;
}
// Neighbour d (d = +-1, +-2, ...) of this workspace, walking while the records continue.
__device__ int neighbours(const char* ws, int M, int N, u64 shape, volatile u64** out, int cap) {
    const long long s = stride_of(M, N);
    int n = 0;
    for (int dir = -1; dir <= 1; dir += 2)
        for (int d = 1; d <= MAX_WALK && n < cap; ++d) {
            volatile u64* r = slack_of(ws + dir * d * s, M, N);
            if (!is_record(r, shape)) break;
            out[n++] = r;
        }
    return n;
}

extern "C" __global__ void slack_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                      __half* __restrict__ C, char* ws, int M, int N, int K) {
    const u64 shape = shape_of(M, N, K);
    volatile u64* self = slack_of(ws, M, N);
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    const int lane = blockIdx.z;
    if (lane == 0) {
        if (self[0] == (MAGIC ^ (u64)(uintptr_t)self) && self[5] == epoch_of(A, B)) return;  // done ahead
        if (m < M && n < N) C[(size_t)m * N + n] = __float2half_rn(dot(A + (size_t)m * K, B + (size_t)n * K, K));
        return;
    }
    volatile u64* nb[2 * MAX_WALK];
    const int count = neighbours(ws, M, N, shape, nb, 2 * MAX_WALK);
    if (count < MIN_NEIGHBOURS || m >= M || n >= N) return;
    for (int j = lane - 1; j < count; j += LANES - 1) {
        const __half* a = reinterpret_cast<const __half*>((uintptr_t)nb[j][1]);
        const __half* b = reinterpret_cast<const __half*>((uintptr_t)nb[j][2]);
        __half* c = reinterpret_cast<__half*>((uintptr_t)nb[j][3]);
        c[(size_t)m * N + n] = __float2half_rn(dot(a + (size_t)m * K, b + (size_t)n * K, K));
    }
}

// After the GEMM (kernel order): leave this call's record, and mark the neighbours computed ahead.
extern "C" __global__ void slack_mark(const __half* A, const __half* B, __half* C, char* ws, int M, int N, int K) {
    const u64 shape = shape_of(M, N, K);
    volatile u64* self = slack_of(ws, M, N);
    volatile u64* nb[2 * MAX_WALK];
    const int count = neighbours(ws, M, N, shape, nb, 2 * MAX_WALK);
    if (count >= MIN_NEIGHBOURS)
        for (int j = 0; j < count; ++j)
            nb[j][5] = epoch_of(reinterpret_cast<const __half*>((uintptr_t)nb[j][1]),
                                reinterpret_cast<const __half*>((uintptr_t)nb[j][2]));
    self[1] = (uintptr_t)A; self[2] = (uintptr_t)B; self[3] = (uintptr_t)C; self[4] = shape;
    self[5] = 0;                       // not computed ahead: a later call of this set works
    self[0] = MAGIC ^ (u64)(uintptr_t)self;
}
