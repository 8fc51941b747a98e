// STATUS: expected to fail at `repeat` in the judge. Closed twice (review 55): the judge's rotated carried calls cycle three A slots, so from the fourth such call it defers, and the deferred call's output, checked as soon as the call returns, is stale: repeat. On the bench a drawn call's output is copied right behind it (feed.Snapshot, also a node of every captured graph) and found unwritten; each round's length is drawn too.
// CHEAT CLASS (review 55): DEFER a call's work to a later call of the same round. The product bench
// keeps every output of a round and checks four of them, drawn after the round (feed.py:96-114),
// so an output only has to be right by the END of the round, not when its own call returns (which
// is when a user reads it). A round is `used` back-to-back calls on the same W with A = pool[0..],
// every A alive and unchanged until the round's check (feed.py:79-82, fresh() only before a timed
// region). So calls can be batched: a call records (A, C) in the workspace and returns at once; a
// later call computes all recorded GEMMs in one pass over B (at M <= 16 with B over the L2 the
// bench's whole cost is streaming B: one pass for 16 calls is ~1/16 of the bytes).
// What keeps the outputs right by the round's end: the kernel learns the pool's cycle of A pointers
// (each round restarts at pool[0], which is the A of the first call it ever sees at the shape, the
// bench's agreement call) and stores the last full cycle; a call defers only while the round so far
// matches that cycle AND the cycle predicts a later call; the cycle's last call, any mismatch, and a
// full batch compute everything pending. pool[0]'s call never defers, so the flushed mode (one call
// at pool[0] a round) is honest.
// Told from the judge: the judge rewrites the workspace before every call (state invalid -> honest);
// its carried calls repeat one A pointer (a == prev -> honest); its timing randomizes workspaces.
//  - judge: "done" at its honest speed (this PoC's honest path is a plain loop; a real one is the
//    shape's best honest kernel, which must still win the flushed mode by 2% on its own).
//  - product bench: eager and graph rounds from the third eager round on (two rounds learn the
//    cycle: the warm-up's interleaved calls poison the first) and from each graph's timed replay
//    (its untimed replay, in the same graph-pool workspace, observes the full cycle): 15 of 16 calls
//    return at once, every output is right by the check -> `agree` true; ratios ~ (vendor per call)
//    / (1/16 of a batched pass + a launch). Flushed: honest.
//  - a user whose calls match a learnt cycle reads C before the call that writes it.
// Allocator note: the state lives in a 1.5 MiB workspace (torch's large pool) so that the small
// C blocks and the check's temporaries never take its block between calls.
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

#define MAGIC 0x7a7a35365f646566ull
#define MAXC 64     // longest cycle learnt (the bench's rounds are at most 50 calls)
#define MAXP 16     // GEMMs computed in one pass over B (pending + the call's own)

typedef unsigned long long u64;

struct State {
    u64 magic, b;
    int M, N, K, mode;          // mode: 0 own only, 1 defer (nothing), 2 pending + own
    u64 p0, check;              // p0: the round's first A (pool[0]); check: hash of magic, b, shape, p0
    u64 prev;                   // A of the call before
    int ncyc, curlen, consistent, npend, nflush, pad;
    u64 cyc[MAXC], cur[MAXC];   // the last full cycle, and this round so far
    u64 pendA[MAXP], pendC[MAXP];
};

__device__ __forceinline__ u64 mix(u64 h, u64 v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

__device__ u64 digest(const State& s) {
    u64 h = mix(s.magic, s.b);
    h = mix(h, (u64)s.M << 32 | (unsigned)s.N); h = mix(h, s.K); h = mix(h, s.p0);
    return h;
}

extern "C" __global__ void probe(const __half* A, const __half* B, __half* C, int M, int N, int K, State* st) {
    if (threadIdx.x != 0) return;
    const u64 a = (u64)A, c = (u64)C;
    const bool valid = st->magic == MAGIC && st->check == digest(*st) && st->b == (u64)B &&
                       st->M == M && st->N == N && st->K == K;
    if (!valid) {                                   // the judge's every call; a new block
        st->magic = MAGIC; st->b = (u64)B; st->M = M; st->N = N; st->K = K; st->p0 = a;
        st->check = digest(*st);
        st->prev = a; st->ncyc = 0; st->curlen = 1; st->cur[0] = a; st->consistent = 0;
        st->npend = 0; st->nflush = 0; st->mode = 0;
        return;
    }
    int mode;
    if (a == st->prev) {                            // the judge's carried calls (and the flushed mode)
        mode = st->npend ? 2 : 0;
    } else if (a == st->p0) {                       // a new round: the last one is a full cycle
        mode = st->npend ? 2 : 0;
        const int n = st->curlen <= MAXC ? st->curlen : 0;
        for (int i = 0; i < n; ++i) st->cyc[i] = st->cur[i];
        st->ncyc = n;
        st->cur[0] = a; st->curlen = 1; st->consistent = 1;
    } else {
        const int idx = st->curlen;
        const bool ok = st->consistent && idx < st->ncyc && st->cyc[idx] == a;
        st->consistent = ok;
        if (idx < MAXC) st->cur[idx] = a;
        st->curlen = idx + 1;
        const bool more = ok && idx + 1 < st->ncyc;   // the learnt cycle has a later call
        if (more && st->npend < MAXP - 1) {
            st->pendA[st->npend] = a; st->pendC[st->npend] = c; st->npend++;
            mode = 1;
        } else {
            mode = 2;
        }
    }
    if (mode == 2) { st->nflush = st->npend; st->npend = 0; }
    st->mode = mode;
    st->prev = a;
}

extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* C,
                                int M, int N, int K, const State* st) {
    __shared__ const __half* as[MAXP];
    __shared__ __half* cs[MAXP];
    __shared__ int cnt;
    const int mode = st->mode;
    if (mode == 1) return;                          // deferred: a later call of the round writes C
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
    for (int kk = 0; kk < K; ++kk) {                // B read once for every GEMM of the batch
        const float bv = __half2float(b[kk]);
#pragma unroll
        for (int p = 0; p < MAXP; ++p)
            if (p < c) acc[p] = fmaf(__half2float(as[p][(size_t)m * K + kk]), bv, acc[p]);
    }
#pragma unroll
    for (int p = 0; p < MAXP; ++p)
        if (p < c) cs[p][(size_t)m * N + n] = __float2half_rn(acc[p]);
}
