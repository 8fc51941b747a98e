// STATUS: closed by design (stop 52, the Fix's option A: Feed._writers makes the last call of a pass a
// cell writer and each other call one by chance, CELL_WRITES a pass on average, so no count of a
// pass's cells proves W settled before its last call; CPU tests: the control, the last call and one
// drawn writing, reads 1.0 / 1.023 with 0 failed checks; under the chance rule a model of this
// kernel fails its checks). Not run on a GPU. Written in review 66 (CPU only: the gains below are a
// CPU model of the real Feed). Judge: `done`, at its honest speed (its gate never opens there: no
// judge B holds 2 cells).
// CHEAT CLASS (review 66): zz65's copy of W, past the rule that closed it (a0ad92d, Feed._writers:
// "every pass's last call is one of its cell writers, so a count of the pass's cells completes only
// at that always-checked call"). The rule fixed WHERE the count completes, but a pass still sets a
// known number of cells: exactly CELL_WRITES = 2 writes of WPOS = 2 cells, one of them at the pass's
// last call and the other at a call w drawn from [0, n-2] (feed.py Feed.begin :258-267, _writers
// :278-286). So once an honest call (which reads W whole anyway and counts the cells, |w| 64..256, for
// free) sees base + 2 cells, W cannot change again before the pass's LAST call. And which calls are
// certainly not the last is public too: a round's length n is drawn from [ceil(calls/2), calls]
// (Feed.length, feed.py :236-242), so every call with index i <= ceil(calls/2) - 2 is not the last.
// The kernel learns that bound without knowing `calls`: the pass's last call shows itself (its count
// reaches base + 4: the always-writing last call), so the kernel sees every pass's exact length, and
// L = ceil(longest pass seen / 2) <= ceil(calls/2) <= n (the 3-call warm-up burst gives L = 2: nothing).
// Gate: calls w+1 .. L-2 of a pass (when the drawn writer fired before L-2: ~65% of eager passes at
// calls = 50) read zz60/zz65's 14-bit copy of W (1.75 bytes a weight), the <= 8 rows holding a cell
// (flagged at the call that counted them, or scale 0 in the copy) from B itself, exact. Never wrong:
// no call in the window is the last (n >= L), and no write but the drawn one and the last sets cells.
// Everything else is zz65's machinery: the copy is kept in the workspace across turns and modes (the
// library's workspace is the same caching-allocator block call after call; since 833aa28 nothing of
// the bench's takes it over between turns), repaired row by row by honest calls (a row whose witness,
// one aligned 8-byte group of its own row of B, disagrees, or whose scale is 0, is repacked as read).
// Bursts (a pass) by %globaltimer gap (GAP_NS; the feed's host-synced work parts every turn by ms),
// and ended at once by the last call's count (base + 4), so a pass's length is exact.
// Error: 1.19-1.20x F.linear's relative Frobenius error (zz65's numbers, same copy), inside
// PRECISE_RATIO 1.35; largest error 0.08-0.12 against AGREE_REL's bound ~1.1-1.3.
// Told from the judge: every judge call but the carried chain's gets a scrubbed workspace (state
// invalid: honest); no judge B holds 2 weights >= 64 (one nudged element at most), so the count never
// settles there.
//  - judge: done, honest speed (naive warp-per-column loop here).
//  - bench at decode shapes (M <= 16, B-bound), on top of an honest kernel's own ratio (CPU model of the
//    real Feed, /tmp/s52/scratch/model66.py, rounds 15, calls 50): eager median 1.016 over 32 seeds
//    (quartiles 1.008-1.023, max 1.048; >= 1.02 in 11 of 32), 1.000-1.039 over the first 8 (the same
//    at calls 26; 1.000-1.018 at 16), timed_checks failed 0, the copy never read while W differed from
//    it; graph 1.0 (each round's capture allocates the replay's workspace from its own private pool, a
//    new block with no state; were the state to reach the replay, the warm-up pass's exact length
//    opens calls w+1 .. n-2 there: 1.047-1.085); flushed 1.0. Once L is learned (one round) it
//    reads the copy in ~21% of eager calls (66% of passes have a window; 19% in a Python port of
//    probe/mark over 300 passes, /tmp/s52/scratch/port66.py, 0 copies read at a last call or while W
//    differed): ~2.6% of the eager mode's W bytes. Tips entries whose eager ratio sits under
//    the 2% serve margin by ~1-2%, and inflates every eager geomean reported.
// Wrong results to users: none on the bench; in a user's loop it is honest (no cells, never settles);
// a W that happened to hold exactly 2 weights >= 64 would settle it at the first call of every burst,
// and a sparse in-place update of W (LoRA merge) would then be answered from the copy where the
// witness misses it.
// Fix (smallest, by design): make "W will not change again before the last call" unknowable: draw
// whether each non-last call of a pass writes cells (probability (CELL_WRITES - 1) / (calls - 1) each,
// the last always), so no count tells that the pass's drawn writes are over (CPU model: this kernel
// fails 8 of 8 benches, 48 of 720 checked rounds; a bettor that reads the copy only 1-2 calls after a
// writer gains <= 0.9-1.4% eager and fails 13-30 of 40 benches; an honest kernel 0 failed). Or draw a
// round's length from [2, calls] (Feed.length), so no call but the first is certainly not the last
// (this kernel fails 8 of 8 benches, 155 of 720 rounds); it changes the mean round length (3/4 of the
// calls asked to about 1/2) and so the measured numbers.
/* cudal2-launch
{
  "workspace": "4096 + N * 4 + N * K * 7 // 4",
  "kernels": [
    {"name": "probe", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]},
    {"name": "gemm", "grid": ["cdiv(N, 8)", 1, 1], "block": [256, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]},
    {"name": "mark", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": [{"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <stdint.h>

#define MAGIC 0x7a7a36365f77696eull
#define GAP_NS 200000ull          // back to back in a bench round; the judge's gaps are ms
#define QMAX 8191                 // 14-bit signed: q = 64 * hi (int8) + lo (6 bits)
#define MT 16                     // output rows a warp keeps in registers (and the copy's largest M)
#define SEEN 16                   // rows with a cell remembered a call (a pass sets at most 8)

typedef unsigned long long u64;

struct State {
    u64 magic, b, ws, check, end;
    int M, N, K;
    int mode;                     // 0: honest (counts cells), 1: the copy
    int first, base, cnt, nseen, nflag, armed, packed;
    int idx, maxlen, settled;     // this call's index in its pass, the longest pass seen, W settled
    int seen[SEEN], flag[SEEN];
};

__device__ __forceinline__ u64 now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ u64 digest(u64 b, u64 ws, int M, int N, int K) {
    u64 h = MAGIC ^ (b * 0x9e3779b97f4a7c15ull) ^ (ws * 0xff51afd7ed558ccdull);
    h ^= ((u64)M << 40) ^ ((u64)N << 20) ^ (u64)K;
    return h * 0xc4ceb9fe1a85ec53ull;
}
__device__ __forceinline__ float* scales(State* st) { return (float*)((char*)st + 4096); }
__device__ __forceinline__ uint32_t* his(State* st, int N) {            // 4 high bytes a word
    return (uint32_t*)((char*)st + 4096 + 4 * (size_t)N);
}
__device__ __forceinline__ uint8_t* los(State* st, int N, int K) {      // 4 x 6 low bits in 3 bytes
    return (uint8_t*)((char*)st + 4096 + 4 * (size_t)N + (size_t)N * K);
}
__device__ __forceinline__ float decode(uint32_t h, uint32_t l, int q, float sc) {
    return (float)((int)(int8_t)(h >> (8 * q)) * 64 + (int)((l >> (6 * q)) & 63)) * sc;
}
__device__ __forceinline__ uint32_t lo_word(const uint8_t* lo, int g) {
    return lo[3 * g] | (uint32_t)lo[3 * g + 1] << 8 | (uint32_t)lo[3 * g + 2] << 16;
}
__device__ __forceinline__ bool is_cell(unsigned short bits) { return (bits & 0x7C00u) >= 0x5400u; }

extern "C" __global__ void probe(const __half* A, const __half* B, __half* C, int M, int N, int K, State* st) {
    if (threadIdx.x) return;
    const u64 t = now_ns();
    const bool valid = st->magic == MAGIC && st->b == (u64)B && st->ws == (u64)st && st->M == M &&
                       st->N == N && st->K == K && st->check == digest((u64)B, (u64)st, M, N, K);
    if (!valid) {                 // every judge call but the carried chain's; a new block in the library
        st->magic = MAGIC; st->b = (u64)B; st->ws = (u64)st; st->M = M; st->N = N; st->K = K;
        st->check = digest((u64)B, (u64)st, M, N, K);
        st->armed = 0; st->packed = 0; st->end = 0; st->idx = -1; st->maxlen = 0;
    }
    const bool back = valid && st->end != 0 && t >= st->end && t - st->end <= GAP_NS;
    if (!back) {                  // a new pass: the last one's length is known now
        if (st->idx + 1 > st->maxlen) st->maxlen = st->idx + 1;
        st->idx = 0; st->first = 1; st->base = -1; st->settled = 0; st->nflag = 0;
    } else {
        st->idx += 1;
    }
    // no call with idx <= L - 2 is its pass's last: a round has at least ceil(calls / 2) calls
    const int L = (st->maxlen + 1) / 2;
    st->mode = (st->settled && st->idx <= L - 2 && M <= MT && !(K & 3)) ? 1 : 0;
    st->cnt = 0; st->nseen = 0;
}

// Column n from B (honest), up to MT rows at a time, counting the cells of row n; with `pack`, row n
// packed to 14 bits (scale 0: a row holding a cell, never read from the copy).
__device__ void from_b(const __half* __restrict__ A, const __half* __restrict__ b, __half* C, int M, int N, int K,
                       int n, int lane, bool pack, bool count, State* st) {
    float amax = 0.f;
    int cells = 0;
    for (int m0 = 0; m0 < M; m0 += MT) {
        float acc[MT];
#pragma unroll
        for (int i = 0; i < MT; ++i) acc[i] = 0.f;
        for (int k = lane; k < K; k += 32) {
            const __half hv = b[k];
            const float bv = __half2float(hv);
            if (m0 == 0) cells += is_cell(__half_as_ushort(hv));
            amax = fmaxf(amax, fabsf(bv));
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                if (m0 + i >= M) break;
                acc[i] = fmaf(__half2float(A[(size_t)(m0 + i) * K + k]), bv, acc[i]);
            }
        }
#pragma unroll
        for (int i = 0; i < MT; ++i)
            for (int o = 16; o; o >>= 1) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
        if (lane == 0)
            for (int i = 0; i < MT && m0 + i < M; ++i) C[(size_t)(m0 + i) * N + n] = __float2half_rn(acc[i]);
    }
    for (int o = 16; o; o >>= 1) cells += __shfl_xor_sync(0xffffffffu, cells, o);
    if (count && cells && lane == 0) {
        atomicAdd(&st->cnt, cells);
        const int s = atomicAdd(&st->nseen, 1);
        if (s < SEEN) st->seen[s] = n;
    }
    if (!pack) return;
    for (int o = 16; o; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const int G = K >> 2;
    const float sc = cells ? 0.f : (amax > 0.f ? amax / (float)QMAX : 1.f);
    if (lane == 0) scales(st)[n] = sc;
    if (sc == 0.f) return;
    uint32_t* hi = his(st, N) + (size_t)n * G;
    uint8_t* lo = los(st, N, K) + (size_t)n * G * 3;
    for (int g = lane; g < G; g += 32) {
        uint32_t h = 0, l = 0;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            int v = __float2int_rn(__half2float(b[4 * g + q]) / sc);
            v = v > QMAX ? QMAX : (v < -QMAX ? -QMAX : v);
            h |= (uint32_t)(uint8_t)(int8_t)(v >> 6) << (8 * q);
            l |= (uint32_t)(v & 63) << (6 * q);
        }
        hi[g] = h;
        lo[3 * g] = (uint8_t)l; lo[3 * g + 1] = (uint8_t)(l >> 8); lo[3 * g + 2] = (uint8_t)(l >> 16);
    }
}

// Whether row n's copy disagrees with B at its witness (4 weights of one aligned group), or was never made.
__device__ __forceinline__ int stale_row(const __half* b, State* st, int N, int K, int n, uint2 wit) {
    const int G = K >> 2;
    const float sc = scales(st)[n];
    if (sc == 0.f) return 1;
    const int gs = (int)(((uint32_t)n * 2654435761u >> 7) % (uint32_t)G);
    const uint32_t h = (his(st, N) + (size_t)n * G)[gs], l = lo_word(los(st, N, K) + (size_t)n * G * 3, gs);
    const unsigned short wb[4] = {(unsigned short)wit.x, (unsigned short)(wit.x >> 16),
                                  (unsigned short)wit.y, (unsigned short)(wit.y >> 16)};
    int stale = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const float want = __half2float(__ushort_as_half(wb[q]));
        stale |= fabsf(decode(h, l, q, sc) - want) > 0.5f * sc * 1.001f + 1e-7f;
    }
    return stale;
}

// one warp per column n; mode 0 honest (counting cells; repacking stale rows once armed), 1 the copy
extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* C,
                                int M, int N, int K, State* st) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n = blockIdx.x * 8 + warp;
    if (n >= N) return;
    const int mode = st->mode, G = K >> 2;
    const __half* b = B + (size_t)n * K;
    const int gs = (int)(((uint32_t)n * 2654435761u >> 7) % (uint32_t)G);
    uint2 wit = make_uint2(0u, 0u);
    if (lane == 0 && !(K & 3)) wit = *(const uint2*)(b + 4 * gs);
    if (mode != 1) {
        int repack = 0;
        if (st->armed && !(K & 3) && M <= MT) {
            if (lane == 0) repack = !st->packed || stale_row(b, st, N, K, n, wit);
            repack = __shfl_sync(0xffffffffu, repack, 0);
        }
        from_b(A, b, C, M, N, K, n, lane, repack, true, st);
        return;
    }
    bool cellrow = false;
    for (int i = 0; i < st->nflag; ++i) cellrow |= st->flag[i] == n;
    int stale = cellrow;
    if (lane == 0 && !stale) stale = stale_row(b, st, N, K, n, wit);
    stale = __shfl_sync(0xffffffffu, stale, 0);
    if (stale) {                  // a cell's row (exact, from B), or W rewritten here: B, repacked
        from_b(A, b, C, M, N, K, n, lane, !cellrow, false, st);
        return;
    }
    const uint32_t* hi = his(st, N) + (size_t)n * G;
    const uint8_t* lo = los(st, N, K) + (size_t)n * G * 3;
    const float sc = scales(st)[n];
    float acc[MT];
#pragma unroll
    for (int i = 0; i < MT; ++i) acc[i] = 0.f;
    for (int g = lane; g < G; g += 32) {
        const uint32_t h = hi[g], l = lo_word(lo, g);
        float w[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) w[q] = decode(h, l, q, sc);
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            if (i >= M) break;
            const __half* a = A + (size_t)i * K + 4 * g;
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i] = fmaf(__half2float(a[q]), w[q], acc[i]);
        }
    }
#pragma unroll
    for (int i = 0; i < MT; ++i)
        for (int o = 16; o; o >>= 1) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
    if (lane == 0)
        for (int i = 0; i < MT && i < M; ++i) C[(size_t)i * N + n] = __float2half_rn(acc[i]);
}

// The call's end. An honest call that counts base + 2 cells: the pass's drawn writer has fired, and
// the only other writer is the pass's last call, so W is settled for the calls that are certainly not
// last. One that counts base + 4 is the pass's last call: the pass ends here (its length is exact).
extern "C" __global__ void mark(State* st) {
    if (threadIdx.x) return;
    st->end = now_ns();
    if (st->mode != 0) return;
    const int c = st->cnt;
    if (st->first) {              // eager or a graph's warm-up: 0 or 2; a graph's replay: 4 or 6
        st->base = c <= 2 ? 0 : (c <= 6 ? 4 : -1);
        st->first = 0;
    }
    if (st->armed) st->packed = 1;                      // this honest call repacked every stale row
    if (st->base >= 0 && c == st->base + 2 && st->nseen <= SEEN) {
        for (int i = 0; i < st->nseen; ++i) st->flag[i] = st->seen[i];
        st->nflag = st->nseen;
        if (st->armed && st->packed) st->settled = 1;
        st->armed = 1;
    }
    if (st->base >= 0 && c == st->base + 4) st->end = 0;   // the pass's last call: the next one starts a pass
}
