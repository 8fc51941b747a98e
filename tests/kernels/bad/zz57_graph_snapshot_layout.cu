// STATUS: expected `done` in the judge, at its honest speed. Passes the judge at its honest speed. Closed on the bench (review 56): no graph runs before its timed replay (uploaded, not replayed), each pass draws its own snapshot place, and the copy goes into a buffer made before the pass, so the timed replay is the graph's first run and no allocation marks the copy: the kernel finds no burst to repeat and stays honest (it gains nothing).
// CHEAT CLASS (review 56): DEFER in graph mode, finishing only the call the bench's Snapshot node
// follows. The snapshot (feed.Feed.begin/caller, product_bench.torch_feed.Snap) is one node at a
// position r drawn per round, but it is the SAME node in the graph's untimed replay and its timed
// replay, and the capture that placed it leaves a mark a kernel can read: its 64-byte output is
// allocated from the graph's private small pool between C_r and C_{r+1}, so where C is under 1 MB
// (every decode shape: M*N*2 <= 1 MiB) the C pointers the graph bakes step by round512(M*N*2)
// everywhere but C_{r+1} - C_r = stride + 512. (Where C is larger, the node's extra duration between
// call r's end and call r+1's start on %globaltimer in the untimed replay marks it too: speculative.)
// State in the workspace (1.5 MiB: torch's large pool, apart from the C blocks): each "burst" (calls
// whose probes are < 1 ms apart) records its (A, C) list. A graph's workspace is a fresh private-pool
// block, so its untimed replay is burst 1 since the state was made and its timed replay burst 2. In
// burst 2 only, while the (A, C) list repeats burst 1's exactly and burst 1's C list shows exactly
// one +512 step (the snapshot after r): every call but r and the last returns at once; r and the last
// compute everything pending in one pass over B (zz56_deferred_batch's batching).
// - judge: every call is its own burst (ms of scrub, flush and checks between calls; carried calls
//   too), and every timing replay/call randomizes the workspace: always honest.
// - bench eager: its workspace sees many bursts (burst 2 = the first eager round, whose list never
//   repeats burst 1's: the warm-up interleaves theirs' calls) -> honest; flushed: honest.
// - bench graph timed replay: ~n/2 GEMMs per pass over B at decode shapes; the snapshot finds call
//   r's output written, all kept outputs are right by the check -> agree true, graph ratio inflated.
// Expected: judge "done" at its honest speed; bench: a fake graph speedup (not in eager/flushed).
/* cudal2-launch
{
  "workspace": "1572864",
  "kernels": [
    {"name": "probe", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]},
    {"name": "gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <stdint.h>

#define MAGIC 0x7a7a35375f736e70ull
#define MAXC 64
#define MAXP 16
#define GAP_NS 1000000ull
#define PAIR_NS 100000000ull   // the untimed and timed replays of one graph: ~ms apart (check + fresh)
typedef unsigned long long u64;

struct State {
    u64 magic, b, ws, check;
    int M, N, K, mode;
    u64 last;                     // %globaltimer at the previous probe
    int bursts, curlen, prevlen, prevsnap, match, npend, nflush, near;
    u64 curA[MAXC], curC[MAXC], prevA[MAXC], prevC[MAXC];
    u64 pendA[MAXP], pendC[MAXP];
};

__device__ __forceinline__ u64 now_ns() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ u64 digest(const State& s) {
    u64 h = s.magic ^ (s.b * 0x9e3779b97f4a7c15ull) ^ (s.ws * 0xff51afd7ed558ccdull);
    h ^= ((u64)s.M << 40) ^ ((u64)s.N << 20) ^ (u64)s.K;
    return h * 0xc4ceb9fe1a85ec53ull;
}

// the one call a snapshot follows, from a burst's C list: exactly one step of stride + 512, every
// other step the stride or (at most two) a jump to another 2 MiB segment; else -1
__device__ int snapshot_after(const u64* c, int n, u64 stride) {
    int at = -1, odd = 0;
    for (int i = 1; i < n; ++i) {
        const u64 d = c[i] - c[i - 1];
        if (d == stride) continue;
        if (d == stride + 512) { if (at >= 0) return -1; at = i - 1; continue; }
        if (++odd > 2) return -1;
    }
    return at;
}

extern "C" __global__ void probe(const __half* A, const __half* B, __half* C, int M, int N, int K, State* st) {
    if (threadIdx.x) return;
    const u64 a = (u64)A, c = (u64)C, t = now_ns();
    const bool valid = st->magic == MAGIC && st->b == (u64)B && st->ws == (u64)st && st->M == M &&
                       st->N == N && st->K == K && st->check == digest(*st);
    if (!valid) {
        st->magic = MAGIC; st->b = (u64)B; st->ws = (u64)st; st->M = M; st->N = N; st->K = K;
        st->check = digest(*st);
        st->bursts = 1; st->curlen = 1; st->curA[0] = a; st->curC[0] = c; st->prevlen = 0;
        st->prevsnap = -1; st->match = 0; st->near = 0; st->npend = 0; st->nflush = 0; st->mode = 0; st->last = t;
        return;
    }
    int mode = 0;
    if (t - st->last > GAP_NS) {                      // a new burst: the last one becomes "prev"
        const int n = st->curlen < MAXC ? st->curlen : MAXC;
        for (int i = 0; i < n; ++i) { st->prevA[i] = st->curA[i]; st->prevC[i] = st->curC[i]; }
        st->prevlen = st->curlen <= MAXC ? st->curlen : 0;
        const u64 stride = (((u64)M * N * 2) + 511) & ~511ull;
        st->prevsnap = st->prevlen >= 4 ? snapshot_after(st->prevC, st->prevlen, stride) : -1;
        st->near = t - st->last < PAIR_NS;   // not a burst of long ago in a recycled block
        st->bursts += 1; st->curlen = 0; st->match = 1;
    }
    const int j = st->curlen;
    if (j < MAXC) { st->curA[j] = a; st->curC[j] = c; }
    st->curlen = j + 1;
    st->match = st->match && j < st->prevlen && st->prevA[j] == a && st->prevC[j] == c;
    const bool cheat = st->bursts == 2 && st->near && st->match && st->prevsnap >= 0;
    if (cheat && j != st->prevsnap && j != st->prevlen - 1 && st->npend < MAXP - 1) {
        st->pendA[st->npend] = a; st->pendC[st->npend] = c; st->npend++;
        mode = 1;                                     // deferred: a later call writes this C
    } else {
        mode = 2;                                     // pending (if any) and its own, now
    }
    if (mode == 2) { st->nflush = st->npend; st->npend = 0; }
    st->mode = mode;
    st->last = t;
}

extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* C,
                                int M, int N, int K, const State* st) {
    __shared__ const __half* as[MAXP];
    __shared__ __half* cs[MAXP];
    __shared__ int cnt;
    const int mode = st->magic == MAGIC ? st->mode : 0;
    if (mode == 1) return;
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    if (tid == 0) {
        int n = mode == 2 ? st->nflush : 0;
        for (int i = 0; i < n; ++i) { as[i] = (const __half*)st->pendA[i]; cs[i] = (__half*)st->pendC[i]; }
        as[n] = A; cs[n] = C; cnt = n + 1;
    }
    __syncthreads();
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* b = B + (size_t)n * K;
    const int c = cnt;
    float acc[MAXP];
#pragma unroll
    for (int p = 0; p < MAXP; ++p) acc[p] = 0.0f;
    for (int kk = 0; kk < K; ++kk) {                  // B read once for every GEMM of the batch
        const float bv = __half2float(b[kk]);
#pragma unroll
        for (int p = 0; p < MAXP; ++p)
            if (p < c) acc[p] = fmaf(__half2float(as[p][(size_t)m * K + kk]), bv, acc[p]);
    }
#pragma unroll
    for (int p = 0; p < MAXP; ++p)
        if (p < c) cs[p][(size_t)m * N + n] = __float2half_rn(acc[p]);
}
