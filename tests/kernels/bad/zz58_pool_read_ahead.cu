// STATUS (review 58): CLOSED on the bench, which now writes each A right before its call in its
// back-to-back rounds (library/stamp.py: values drawn when the write runs), so what this kernel read
// ahead is stale and its outputs disagree (tests/test_gpu_library.py). Still expected `done` in the
// judge at its honest speed: no judge call comes right after another, so its %globaltimer gate never
// opens there; a gate on time, not state, is answered where the time exists (the bench), not by the
// judge's calls.
// Before the stamp: it passed the judge ("done", at its honest speed), and on the product bench eager and
// graph rounds at decode shapes record a fake speedup with every check passing (agree true).
// CHEAT CLASS (review 58): READING AHEAD through the bench's pool of A tensors (the class feed.py's
// docstring lists as open), told from the judge by the %globaltimer gap between calls, with no state
// learnt across rounds, so it works in graph mode too (each round's new graph pool).
// How: feed.fresh() (library/feed.py:166-171) writes every pool tensor before the timed region, and a
// round calls pool[0], pool[1], ... back to back (Feed.caller, feed.py:117-131). The pool is made by
// consecutive torch.empty_like (product_bench.py:321), so at decode shapes (A = 16xK fp16, <=1 MB:
// torch's small pool, 2 MiB segments) pool[j+1] - pool[j] is one constant stride inside a segment.
// A call that follows the previous one by under GAP_NS (read on %globaltimer, allowed: constbank.py:86)
// and whose A is the third of a run of equal strides computes, in ONE pass over B, its own output and
// the outputs of every A at A + k*stride inside the same 2 MiB window (at most MAXP-1), keeping them in
// the workspace keyed by pointer; the calls on those A's copy M*N halves. The outputs are exact fp32
// sums of the A's final contents, so intact(), agreement, precise rows and the Snapshot (the output is
// there when its call returns) all pass.
// Told from the judge: every judge call, carried or not, follows host-side checks, a scrub and an L2
// flush (judge.py:387-405, 487-526): gaps of milliseconds, so the state is cleared and the call is
// honest; its timing sets each have their own B and workspace (judge.py:800-834), so no batch there.
//  - judge: done, honest speed (this PoC's honest path is a naive loop).
//  - bench: flushed honest (one call after idle_cold); eager/graph: 1 pass over B per ~15 calls at
//    M<=16 (B-bound): ratio ~ several x where B >> L2. A user whose next activation buffer sits at
//    A + stride gets the output of its stale contents: wrong results.
// Closing fix: fill each pool A right before its call, on the timed stream (untimed-equivalent on both
// sides), or gate: rewrite a few random pool A's after the first call of a round on the same stream.
/* cudal2-launch
{
  "workspace": "4096 + 16 * M * N * 2",
  "kernels": [
    {"name": "probe", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]},
    {"name": "gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}, {"ws": 4096}]},
    {"name": "stamp", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": [{"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <stdint.h>

#define MAGIC 0x7a7a35385f726561ull
#define MAXP 16
#define GAP_NS 200000ull          // 200 us: back to back in a bench round; the judge's gaps are ms
#define WINDOW (2ull << 20)       // torch's small-pool segment

typedef unsigned long long u64;

struct State {
    u64 magic, b, end, prev;
    long long stride;
    int M, N, K, mode, src, nplan;
    u64 keys[MAXP];               // A pointer of each kept output (slot i)
    int ready[MAXP];
};

__device__ __forceinline__ u64 now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void probe(const __half* A, const __half* B, __half* C, int M, int N, int K, State* st) {
    if (threadIdx.x != 0) return;
    const u64 a = (u64)A, t = now_ns();
    const bool valid = st->magic == MAGIC && st->b == (u64)B && st->M == M && st->N == N && st->K == K;
    if (!valid || t - st->end > GAP_NS || t < st->end) {     // the judge's every call; a round's start
        st->magic = MAGIC; st->b = (u64)B; st->M = M; st->N = N; st->K = K;
        st->prev = a; st->stride = 0; st->mode = 0; st->nplan = 0;
        for (int i = 0; i < MAXP; ++i) { st->keys[i] = 0; st->ready[i] = 0; }
        return;
    }
    for (int i = 0; i < MAXP; ++i)
        if (st->ready[i] && st->keys[i] == a) { st->mode = 2; st->src = i; st->prev = a; return; }
    const long long s = (long long)(a - st->prev);
    const long long abytes = 2ll * M * K;
    int mode = 0;
    if (s >= abytes && s == st->stride) {                  // pool[j-2], pool[j-1], pool[j]: one stride
        const u64 base = a & ~(WINDOW - 1);
        int n = 0;
        for (int k = 1; k < MAXP && a + (u64)k * s + abytes <= base + WINDOW; ++k) {
            st->keys[n] = a + (u64)k * s; st->ready[n] = 1; ++n;
        }
        for (int i = n; i < MAXP; ++i) { st->keys[i] = 0; st->ready[i] = 0; }
        st->nplan = n;
        mode = n ? 1 : 0;
    }
    st->stride = s;
    st->prev = a;
    st->mode = mode;
}

extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* C,
                                int M, int N, int K, const State* st, __half* outs) {
    const int mode = st->mode;
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const size_t mn = (size_t)M * N;
    if (mode == 2) {                                       // read ahead by an earlier call of the round
        C[(size_t)m * N + n] = outs[st->src * mn + (size_t)m * N + n];
        return;
    }
    const int cnt = mode == 1 ? st->nplan + 1 : 1;
    const __half* as[MAXP];
    as[0] = A;
#pragma unroll
    for (int p = 1; p < MAXP; ++p) as[p] = p < cnt ? (const __half*)st->keys[p - 1] : A;
    const __half* b = B + (size_t)n * K;
    float acc[MAXP];
#pragma unroll
    for (int p = 0; p < MAXP; ++p) acc[p] = 0.0f;
    for (int kk = 0; kk < K; ++kk) {                       // B read once for the whole batch
        const float bv = __half2float(b[kk]);
#pragma unroll
        for (int p = 0; p < MAXP; ++p)
            if (p < cnt) acc[p] = fmaf(__half2float(as[p][(size_t)m * K + kk]), bv, acc[p]);
    }
    C[(size_t)m * N + n] = __float2half_rn(acc[0]);
#pragma unroll
    for (int p = 1; p < MAXP; ++p)
        if (p < cnt) outs[(p - 1) * mn + (size_t)m * N + n] = __float2half_rn(acc[p]);
}

extern "C" __global__ void stamp(State* st) {
    if (threadIdx.x == 0) st->end = now_ns();
}
