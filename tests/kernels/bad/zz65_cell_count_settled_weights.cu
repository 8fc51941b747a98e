// STATUS: closed by design (stop 52). First fix: Feed._writers made every pass's last call one of its
// cell writers, so a count of the pass's cells completes only at that always-checked call (CPU tests:
// the control reads 1.02-1.05 with 0 failed checks under drawn writers; the copy is never read under
// the rule). Review 66 found the rule still left a known writer count (zz66); since then each other
// call of a pass writes by chance (tests/test_bench_feed.py's settled-copy tests). Not run on a GPU.
// Written in review 65 (CPU only: the gains below are a CPU model of the real Feed and byte counts).
// Judge: `done`, at its honest speed (its gate never opens).
// CHEAT CLASS (review 65): zz60's copy of W, past the cells that closed it, by COUNTING the cells.
// The cells were argued safe because "a kernel that keeps a copy of W through a burst cannot tell
// which calls changed it" (feed.py CELL_WRITES comment, :111-116; stamp.py :21-25). But how MANY
// cells a pass sets is a public constant: Feed.begin (feed.py :259-266) gives every stamped pass
// exactly writers = min(calls, CELL_WRITES) = 2 writes (a round has >= 2 calls: Feed.length) of
// WPOS = 2 distinct cells each, and a cell is told from any Gaussian weight for free: magnitude
// 64..256 (stamp.weight_half: fp16 exponent field 21 or 22, bits & 0x7C00 >= 0x5400) where torch.randn
// in fp16 never passes ~6. An honest call reads W whole anyway, so it COUNTS the set cells as it
// goes. Once the count reaches its target no later call of the pass can change W (cells are put back
// only at the next Feed.begin; new_weights only before a mode), and every cell's row is known: from
// then on the pass's calls read a 14-bit copy of W (1.75 bytes a weight, zz60's layout), the <= 8
// rows holding a cell from B itself, exact.
// The target from the count at a burst's first call (a burst: calls whose %globaltimer gap from the
// last call's end is under GAP_NS; every turn is one, the feed's host-synced checks part them):
//  - eager turn, or a graph's eager warm-up pass: the turn's cells were all put back at begin, and
//    the two writers are DISTINCT calls, so call 0 sees 0 or 2 set cells -> target 4;
//  - a graph's timed replay: the warm-up pass's 4 cells are still set (put back only at the next
//    begin), so call 0 sees 4 or 6 -> target 8;
//  - a flushed turn: one call (2 host-set cells), no later call to win on; the judge: never a cell
//    (no judge fill reaches 64; one nudged element at most), so the count never reaches 4: honest.
// The copy is made once per W version, not per turn (per turn the pack costs more than the tail
// of the pass saves: CPU model 0.98-1.00): in honest calls after the first completed count in this
// workspace ("armed"), each row whose witness (one aligned 8-byte group of its own row of B, zz64's
// check: a whole rewrite slips through a column with p ~ 6e-16) disagrees with the copy, or whose
// scale is 0 (it held a cell), is repacked as it is read. The library's workspace is the same
// caching-allocator block call after call, and since 833aa28 (the feed's own work allocates from an
// aside MemPool) nothing of the bench's takes it over between turns: the copy lives through a mode.
// Never wrong: the copy is read only after the count proves W settled; a row changed since packing
// is either a cell row (read from B) or caught by its witness (recomputed from B and repacked).
// Error: 1.19-1.20x F.linear's relative Frobenius error (numpy, 16x2048x4096, Gaussian and stamped
// A), inside PRECISE_RATIO 1.35; largest error 0.08-0.12 against AGREE_REL's bound ~1.1-1.3.
// Told from the judge: every judge call but the carried chain's gets a scrubbed workspace (state
// invalid: honest, nothing packed), and no judge B holds 4 cells, so the count never reaches its
// target there.
//  - judge: done, honest speed (naive warp-per-column loop here).
//  - bench at decode shapes (M <= 16, B-bound), on top of an honest kernel's own ratio: eager
//    1.017-1.042 (median of rounds; 8 seeds of the CPU model, calls 50; 1.014-1.043 at 26, 1.009-1.031
//    at 20), timed_checks failed 0; graph the same where the timed replay finds its copy (the modelled
//    graph 1.012-1.046 assumes the copy survives; each round's graph has its own private pool, so on a
//    GPU it may stay honest, 1.0); flushed 1.0. It reads the copy in ~27% of eager calls (after the
//    pass's last cell write, the max of two uniform draws). Tips entries whose eager/graph ratio sits
//    under the 2% margin, and inflates every eager geomean reported.
// Wrong results to users: none on the bench; in a user's loop it is honest (no cells), but a W that
// happened to hold 4 weights >= 64 and gained none would settle it: a sparse in-place update of W
// (LoRA merge) would then be answered from the copy where the witness misses it.
// Fix (smallest, by design): make "the pass's changes are over" unobservable before its last call:
// one of each pass's CELL_WRITES writers is ALWAYS the pass's last call (Feed.begin: w = calls - 1 for
// one of them), whose output is always checked. A count that completes then completes only at the
// last call (nothing after it to win on), and a kernel that bets after the first writer answers the
// always-checked last output from a copy missing that call's cells (CPU model: 135 of 180 checked
// rounds fail, every stamped one). (A drawn number of writers per pass also works, less surely.)
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

#define MAGIC 0x7a7a36355f636e74ull
#define GAP_NS 200000ull          // back to back in a bench round; the judge's gaps are ms
#define QMAX 8191                 // 14-bit signed: q = 64 * hi (int8) + lo (6 bits)
#define MT 16                     // output rows a warp keeps in registers (and the copy's largest M)
#define SEEN 16                   // rows with a cell remembered a call (a pass sets at most 8)

typedef unsigned long long u64;

struct State {
    u64 magic, b, ws, check, end;
    int M, N, K;
    int mode;                     // 0: honest (counts cells), 1: the copy
    int first, target, cnt, nseen, nflag, armed, packed;
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
        st->armed = 0; st->packed = 0; st->end = 0;
    }
    const bool back = valid && t >= st->end && t - st->end <= GAP_NS;
    if (!back) { st->first = 1; st->target = -1; st->mode = 0; st->nflag = 0; }   // a new burst
    if (M > MT || (K & 3)) st->mode = 0;
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

// The call's end: the burst's target from its first call's count; the copy from the call after the
// count reached it (W is settled for the rest of the pass: no write of it sets cells again).
extern "C" __global__ void mark(State* st) {
    if (threadIdx.x) return;
    st->end = now_ns();
    if (st->mode != 0) return;
    const int c = st->cnt;
    if (st->first) {
        st->target = c <= 2 ? 4 : (c <= 6 ? 8 : -1);   // eager/warm-up: 0 or 2; a graph's replay: 4 or 6
        st->first = 0;
    }
    if (st->armed) st->packed = 1;                      // this honest call repacked every stale row
    if (c == st->target && st->nseen <= SEEN) {
        for (int i = 0; i < st->nseen; ++i) st->flag[i] = st->seen[i];
        st->nflag = st->nseen;
        if (st->armed && st->packed) st->mode = 1;
        st->armed = 1;
    }
}
