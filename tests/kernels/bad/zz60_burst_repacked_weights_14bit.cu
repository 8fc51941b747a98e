// STATUS: closed on the bench (stop 51): each stamped call also sets two drawn cells of W (the Fix
// below, cells instead of a row: a changed row is found by reading one element a row, a changed
// cell only by reading W whole). Judge: `done`, at its honest speed. Written in review 60, when it
// was open (the gains below are byte counts, not measurements).
// CHEAT CLASS (review 60): a bench-only memo of the WEIGHTS inside one burst of back-to-back calls.
// It is zz57 (late packed weights) again, with two changes that get it past what closed zz57:
//  1. the copy has 14 bits a weight, not 12: q = rint(b / s), s = max|row| / 8191, per row. That is
//     ~1.19x cuBLAS's relative Frobenius error (numpy, 16x4096x4096, the same on stamp-valued and
//     Gaussian A). The bench allows 1.35x (product_bench.PRECISE_RATIO, :304) and the judge 1.25x
//     (config.verify.error_ratio), so precise passes on both; 13 bits read 1.64x and fail.
//  2. it is rebuilt at the 2nd call of every burst, not once: a burst is calls whose %globaltimer gap
//     from the previous call's end is under GAP_NS. The bench rewrites W only between modes
//     (Feed.new_weights), and a host-synced check separates every turn, so each turn is its own
//     burst and its copy is never stale. State sits in the workspace, which the caching allocator
//     hands back call after call in eager mode (zz54) and inside one captured graph's private pool.
// How: probe: the 1st call of a burst is honest (so flushed mode, a lone call after an idle GPU,
// costs nothing extra). The 2nd computes honestly AND writes the packed copy (1 + 0.875 of a W read,
// the row still in L1/L2). Calls 3.. read 1.75 bytes a weight instead of 2. All outputs are computed
// in their own call from their own A (stamped A changes nothing here), so intact, agree, precise
// (1.19x <= 1.35x) and the snapshot all pass.
// Told from the judge: its calls come after checks, a scrub and a flush (ms gaps) with a scrubbed
// workspace, so it is honest there. A tighter gate is free: stamped A has every fp16 exponent field
// equal to 14 or 15 (library/stamp.py stamp_half); no judge fill (pm1, normal, uniform) and no flushed
// fill makes 64 such elements with varying mantissas.
//  - judge: done, honest speed (naive warp-per-column loop here). Even a judge burst would pass, at 1.19x.
//  - bench at decode shapes (B-bound), on top of an honest kernel's own ratio: eager/graph
//    n / (2.875 + 0.875 (n - 2)): ~1.11x at 50 calls a round, ~1.09x at 26 (16x152064x5120),
//    ~1.07x at 20; flushed 1.0x. timed_checks failed 0, agree true: served on a burst gain that no
//    model gets (its same-shape calls alternate W's, so the copy keyed on B is rebuilt or unused).
// Wrong results to users: none within the judge's tolerance, but a W updated in place between two
// back-to-back calls (an RL weight sync into a replayed graph) is answered from the stale copy.
// Fix: before each stamped call, also stamp one drawn row of W in place (keys logged and tagged as
// A's, so weights_intact regenerates it), both sides: any copy of W made before the call is wrong
// in a whole output column, and no kernel finds the row without reading all of W. A tighter
// PRECISE_RATIO (1.10 where all rows are taken, M <= 64) leaves 15 bits (1.05x, ~6% fewer bytes).
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

#define MAGIC 0x7a7a36305f773134ull
#define GAP_NS 200000ull          // back to back in a bench round; the judge's gaps are ms
#define QMAX 8191                 // 14-bit signed: q = 64 * hi (int8) + lo (6 bits)
#define MT 16                     // output rows a warp keeps in registers

typedef unsigned long long u64;

struct State { u64 magic, b, ws, end; int M, N, K, phase, mode; };

__device__ __forceinline__ u64 now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ float* scales(State* st) { return (float*)((char*)st + 4096); }
__device__ __forceinline__ uint32_t* his(State* st, int N) {            // 4 high bytes a word
    return (uint32_t*)((char*)st + 4096 + 4 * (size_t)N);
}
__device__ __forceinline__ uint8_t* los(State* st, int N, int K) {      // 4 x 6 low bits in 3 bytes
    return (uint8_t*)((char*)st + 4096 + 4 * (size_t)N + (size_t)N * K);
}

extern "C" __global__ void probe(const __half* A, const __half* B, __half* C, int M, int N, int K, State* st) {
    if (threadIdx.x) return;
    const u64 t = now_ns();
    const bool valid = st->magic == MAGIC && st->b == (u64)B && st->ws == (u64)st && st->M == M &&
                       st->N == N && st->K == K;
    const bool back = valid && t >= st->end && t - st->end <= GAP_NS;
    if (!back || (K & 3)) {       // every judge call; a burst's first call (flushed mode: every call)
        st->magic = MAGIC; st->b = (u64)B; st->ws = (u64)st; st->M = M; st->N = N; st->K = K;
        st->phase = 0; st->mode = 0;
        return;
    }
    st->mode = st->phase ? 1 : 2;  // 2nd call of the burst packs, later ones read the copy
    st->phase = 1;
}

// one warp per column n, up to MT rows of A at a time; mode 0/2 on B, mode 1 on the 14-bit copy
extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* C,
                                int M, int N, int K, State* st) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n = blockIdx.x * 8 + warp;
    if (n >= N) return;
    const int mode = st->mode, G = K >> 2;
    const __half* b = B + (size_t)n * K;
    uint32_t* hi = his(st, N) + (size_t)n * G;
    uint8_t* lo = los(st, N, K) + (size_t)n * G * 3;
    float amax = 0.f;
    for (int m0 = 0; m0 < M; m0 += MT) {
        float acc[MT];
#pragma unroll
        for (int i = 0; i < MT; ++i) acc[i] = 0.f;
        if (mode == 1) {
            const float sc = scales(st)[n];
            for (int g = lane; g < G; g += 32) {
                const uint32_t h = hi[g];
                const uint32_t l = lo[3 * g] | (uint32_t)lo[3 * g + 1] << 8 | (uint32_t)lo[3 * g + 2] << 16;
                float w[4];
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    w[q] = (float)((int)(int8_t)(h >> (8 * q)) * 64 + (int)((l >> (6 * q)) & 63)) * sc;
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    if (m0 + i >= M) break;
                    const __half* a = A + (size_t)(m0 + i) * K + 4 * g;
#pragma unroll
                    for (int q = 0; q < 4; ++q) acc[i] = fmaf(__half2float(a[q]), w[q], acc[i]);
                }
            }
        } else {
            for (int k = lane; k < K; k += 32) {
                const float bv = __half2float(b[k]);
                amax = fmaxf(amax, fabsf(bv));
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    if (m0 + i >= M) break;
                    acc[i] = fmaf(__half2float(A[(size_t)(m0 + i) * K + k]), bv, acc[i]);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < MT; ++i)
            for (int o = 16; o; o >>= 1) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
        if (lane == 0)
            for (int i = 0; i < MT && m0 + i < M; ++i) C[(size_t)(m0 + i) * N + n] = __float2half_rn(acc[i]);
    }
    if (mode == 2) {              // pack row n (just read: in L1/L2): 1.75 bytes a weight
        for (int o = 16; o; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
        const float sc = amax > 0.f ? amax / (float)QMAX : 1.f;
        if (lane == 0) scales(st)[n] = sc;
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
}

extern "C" __global__ void mark(State* st) {
    if (threadIdx.x == 0) st->end = now_ns();
}
