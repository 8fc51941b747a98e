// STATUS (review 59): CLOSED on the bench, which now stamps every eager and graph call at every M
// (product_bench._stamp) and records the stamp's own cost (`stamp_us`). As written below (before
// the fix) the bench stamped only up to M = 512, so at larger M every pool A held its final contents
// before a round's first call and zz58's read-ahead passed every check. Judge: `done`, honest speed.
// CHEAT CLASS (review 59): READING AHEAD through the bench's pool where the stamp does not reach,
// told from the judge by the %globaltimer gap (zz58's gate) and from the stamped shapes by M.
// Why it can pay there: stamp.py:37-40 reasons that above M = 512 a call is compute-bound, so two
// calls' outputs in one pass over B cost two calls. That holds for a kernel at the roofline, not
// for one whose single call under-fills the GPU: the ksplit shapes of the dev set (1024x1024x12288,
// 2048x512x12288: 64 tiles of 128x128 on 132 SMs), M just above a tile multiple (M = 520 on 128-row
// tiles pads the last tile 94%), wave quantization. Batching the 2-3 calls of a round into one GEMM of
// 2M-3M rows fills the machine without split-K's reduction; the gain is shape-dependent and unmeasured
// (no GPU in this review), but every check passes whatever it is.
// How: at M > 512 the pool holds 3 tensors and a round makes 2-3 calls (feed.pool_size, round_cap).
// A call that follows the last one by under GAP_NS learns its A pointer (state in the workspace,
// which the library's caching allocator hands back call after call in eager mode; zz54); the first
// call after a gap (a round's start: the pool was just filled) computes, in one pass over B, its own
// output and those of every A it learnt, each kept in the workspace; a back-to-back call on one of
// those A's in the same burst copies it. The outputs are exact sums over the A's final contents, so
// intact(), agreement, precise rows and the Snapshot all pass. Graph rounds: each capture's own pool
// usually hides the state, and then it is honest.
// Told from the judge: no judge call follows another by under GAP_NS (zz58), so it never learns an A
// and reads nothing ahead; at M <= 512 (stamped on the bench) it is honest.
//  - judge: done, honest speed (a naive loop).
//  - bench: M > 512 eager rounds: whatever batching 2-3 calls saves, timed_checks failed 0, agree true.
// Wrong results to users: in a model the next layer's activation is written right before its call,
// after this kernel read the block ahead; a caching allocator hands back the same 2-3 activation
// blocks layer after layer, so a served entry returns outputs of stale activations.
// Fix: stamp every eager/graph round whatever M (its write, M*K*2 bytes, is already part of what a
// model pays), timing the stamp alone per round so the ratio can be read without it; or at least
// stamp where the vendor's call leaves the GPU under-filled (tiles < SMs) or the write is under ~10%
// of the call. A sampled or partial stamp does not do: a read-ahead that re-checks a few elements of
// its A before answering from what it kept still gains everywhere the stamp left A alone.
/* cudal2-launch
{
  "workspace": "4096 + 3 * M * N * 2",
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

#define MAGIC 0x7a7a35395f6d3531ull
#define MAXP 4                    // the pool at these shapes: 3 tensors (feed.pool_size)
#define GAP_NS 200000ull
#define STAMPED_UP_TO 512         // stamp.STAMP_MAX_M

typedef unsigned long long u64;

struct State {
    u64 magic, b, end, burst;
    int M, N, K, mode, src, nknown, nplan;
    u64 known[MAXP];              // A pointers met back to back
    u64 ready[MAXP];              // the burst whose output of known[i] is kept in slot i
    int plan[MAXP];               // slots computed by this call (mode 1)
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
    if (!valid) {
        st->magic = MAGIC; st->b = (u64)B; st->M = M; st->N = N; st->K = K;
        st->nknown = 0; st->nplan = 0; st->burst = 0;
        for (int i = 0; i < MAXP; ++i) { st->known[i] = 0; st->ready[i] = 0; }
        st->mode = 0;
        return;
    }
    st->mode = 0; st->nplan = 0;
    if (M <= STAMPED_UP_TO) return;                        // stamped on the bench: stay honest
    const bool gap = t < st->end || t - st->end > GAP_NS;
    if (gap) {                                             // a round's first call: the pool was just filled
        st->burst = t;
        int n = 0;
        for (int i = 0; i < st->nknown; ++i)
            if (st->known[i] != a) st->plan[n++] = i;
        st->nplan = n;
        st->mode = n ? 1 : 0;
        return;
    }
    int k = -1;
    for (int i = 0; i < st->nknown; ++i)
        if (st->known[i] == a) k = i;
    if (k < 0 && st->nknown < MAXP) { st->known[st->nknown] = a; st->nknown += 1; return; }
    if (k >= 0 && st->ready[k] != 0 && st->ready[k] == st->burst) { st->mode = 2; st->src = k; }
}

extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* C,
                                int M, int N, int K, const State* st, __half* outs) {
    const int mode = st->mode;
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const size_t mn = (size_t)M * N, at = (size_t)m * N + n;
    if (mode == 2) {                                       // read ahead at the round's first call
        C[at] = outs[st->src * mn + at];
        return;
    }
    const int cnt = mode == 1 ? st->nplan + 1 : 1;
    const __half* as[MAXP + 1];
    as[0] = A;
#pragma unroll
    for (int p = 1; p <= MAXP; ++p) as[p] = p < cnt ? (const __half*)st->known[st->plan[p - 1]] : A;
    const __half* b = B + (size_t)n * K;
    float acc[MAXP + 1];
#pragma unroll
    for (int p = 0; p <= MAXP; ++p) acc[p] = 0.0f;
    for (int kk = 0; kk < K; ++kk) {                       // B read once for the whole batch
        const float bv = __half2float(b[kk]);
#pragma unroll
        for (int p = 0; p <= MAXP; ++p)
            if (p < cnt) acc[p] = fmaf(__half2float(as[p][(size_t)m * K + kk]), bv, acc[p]);
    }
    C[at] = __float2half_rn(acc[0]);
#pragma unroll
    for (int p = 1; p <= MAXP; ++p)
        if (p < cnt && st->plan[p - 1] < 3) outs[st->plan[p - 1] * mn + at] = __float2half_rn(acc[p]);
}

extern "C" __global__ void stamp(State* st) {
    if (threadIdx.x != 0) return;
    if (st->mode == 1)
        for (int i = 0; i < st->nplan; ++i)
            if (st->plan[i] < 3) st->ready[st->plan[i]] = st->burst;
    st->end = now_ns();
}
