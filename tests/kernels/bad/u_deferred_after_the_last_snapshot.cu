// CHEAT CLASS: batching across calls by deferral, timed around the snapshot nodes -- the calls of a
// replay count the armed snapshot nodes as they pass (an armed node lengthens the gap between two
// calls), and once the fixed number armed per replay (timing.snapshot_calls = 2) have gone by, no
// later call of that replay can be snapshotted: those calls return at once and one later call of the
// same replay computes all of their sets in one grid.
// What it tries: u_deferred_to_a_later_call.cu is closed by snapshots.py: behind every call of every
// graph sits a snapshot node, exactly `k` = 2 of them armed per replay at slots drawn afresh, and an
// armed node copies 256 bytes of its call's C the moment the call ends. Two facts leave a hole:
//   1. an armed node is a real kernel between two calls, a disabled one an empty node, so the gap
//      between the start of call j and the start of call j + 1 grows by about one kernel launch
//      (eval/README.md, snapcost: ~1.4-1.7 us per armed node at 64^3 and 257x136x1032, against a
//      whole call of 2.5-5 us) -- judge.py's own comment at the capture says so ("an armed node
//      lengthens the gap between two calls");
//   2. the number armed per replay is a constant (snapshots.py:93, `rng.sample(..., k)`), so after
//      the second long gap a call KNOWS that no node of the rest of this replay is armed. The
//      positions are uniform, so on average the last third of every replay is unobserved.
// The chip state that carries the count and the deferred sets' pointers from call to call is shared
// memory, as in u_deferred (not scrubbed between the calls of one replay; scrubbed before every
// replay, so every replay starts the count afresh -- which is exactly right: each replay arms 2).
// How (per SM, no consensus between SMs needed, no global memory written but C):
// - grid = 132 CTAs with 160 KiB of dynamic shared memory each: one CTA per SM per call, so each SM
//   sees every call exactly once and counts calls j = 0, 1, 2, ... since the last scrub.
// - at its start every CTA reads %globaltimer; start-to-start gaps of the honest calls are the
//   kernel's own time plus the inter-node latency plus, after an armed node, one snapshot kernel.
//   The SM keeps the sum and sum of squares of the gaps and the three largest (from the gap after
//   call 1 on: call 0 runs colder). With mu and sigma the mean and deviation of the gaps less the
//   two largest, it declares "both snapshots seen" (from call 8 on) when the two largest exceed mu
//   by T = max(600 ns, 7 sigma) and the third largest stays below mu + T/2 (a third long gap means
//   noise: that SM then stays honest). sim_z1.py models this rule: with gap noise sigma <= 0.15 us
//   it defers ~31% of the calls of a replay and defers an armed call in < 1e-4 of replays.
// - calls after that point on an SM that owns tiles of the call (blockIdx < tiles) record
//   (A, B, C, blockIdx) and return: their share of C keeps the random prefill. Each SM completes
//   exactly the shares it skipped, so SMs that disagree about the count cannot lose a tile.
// - call P - 1 (P a lower bound on the judge's set count from the shape, as in u_deferred: with
//   l2_bytes >= 48 MiB, judge.time's nsets >= min(512, ceil(2 * l2 / min_bytes)) >= P; at the
//   tiny shapes below nsets = P = 512) computes its own tiles plus every share its SM deferred.
// - verification, server calls and the first call of every replay follow a scrub: j = 0, honest.
//   The eager pass (no nodes, host-paced) may defer on noisy gaps; it has no snapshots and its
//   batch call comes inside it, so its spot check passes. The final replay and the determinism
//   re-run arm 2 like any replay, and every output comes from the same tile code (WMMA, fp32
//   accumulation, k in order), so the full check and the bitwise re-run see the same bits.
// Why it would earn an undeserved score: offline time per call = replay time / nsets, and about a
// third of a replay's calls become bookkeeping launches whose work is batched into one grid that
// fills the GPU (small shapes leave most SMs idle per call). Expected 1.1-1.4x over the kernel's
// own honest time at the shapes below; server mode (scrub before every call) sees the honest path.
// Not run on a GPU: the gap threshold is set from eval/README.md's snapcost numbers, not measured;
// a mis-detected "both seen" makes it fail at timing (safe for the judge, never a false pass).
// (From a second adversarial review, against the snapshots' first version, which armed exactly two
// per replay.) Closed by arming each node independently (snapshots.Snapshots.arm): must fail at
// "timing" or to pass at its honest speed. Measured on the H100 (2026-11-23, `cudal2 eval` offline at 257x136x1032):
// this file 0.186x twice; with the detection off (T_MIN_NS 1e15) 0.185x; with deferral forced from call 8 on it
// fails; with the batch call removed it failed once in two runs (so the detection does fire at times; where,
// those runs do not say), yet this file scores what its honest variant scores.
// Defence, as the review put it: arm each snapshot node independently (Bernoulli, or any count whose
// remainder is not determined by the arms already seen), so that counting gaps says nothing about
// the rest of the replay; or make a disabled node cost what an armed one does (every node a real
// snapshot kernel, the host choosing after the replay which of them to compare).
// cudal2-shapes: 257x136x1032, 128x128x256, 256x128x512, 64x64x64
/* cudal2-launch
{
  "kernels": [
    {"name": "counted_deferral_gemm", "grid": [132], "block": [256], "smem": 163840,
     "args": ["A", "B", "C", "M", "N", "K",
              {"int": "min(512, max(2, cdiv(2 * 50331648, 2 * (M * K + N * K + M * N))))"}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <mma.h>
#include <cstdint>

using namespace nvcuda;

#define BM 64
#define BN 64
#define BK 32
#define LDS 40                 // halves per smem row of the A/B tiles (32 + 8 pad)
#define LDC 68                 // floats per smem row of the C tile
#define DIR_OFF 131072         // the per-SM record: above the tile buffers, inside the 160 KiB window
#define MAXD 512
#define MAGIC 0x5A4E0C0A7E1D2B33ull
#define T_MIN_NS 600.0

enum { OWN = 0, DEFER = 1, BATCH = 2 };

typedef unsigned long long u64;
struct Share { u64 a, b, c, blk; };
struct Dir {
    u64 magic, shape, count, last, s1, s2, cnt, top1, top2, top3, safe, nd, magic2, pad[3];
    Share s[MAXD];
};

__device__ __forceinline__ u64 globaltimer() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// One 64x64 output tile of C = A * B^T (fp32 accumulation in the tensor cores, k in order).
__device__ void gemm_tile(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
                          int M, int N, int K, int m0, int n0, unsigned char* smem) {
    __half* As = reinterpret_cast<__half*>(smem);
    __half* Bs = As + BM * LDS;
    float* Cs = reinterpret_cast<float*>(smem + 2 * BM * LDS * sizeof(__half));
    const int t = threadIdx.x, warp = t >> 5;
    const int wm = warp & 3, wn = warp >> 2;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
    wmma::fill_fragment(acc[0], 0.0f);
    wmma::fill_fragment(acc[1], 0.0f);
    const int row = t >> 2, ck = (t & 3) * 8;
    for (int k0 = 0; k0 < K; k0 += BK) {
        uint4 va = make_uint4(0, 0, 0, 0), vb = make_uint4(0, 0, 0, 0);
        if (m0 + row < M && k0 + ck < K) va = *reinterpret_cast<const uint4*>(A + (size_t)(m0 + row) * K + k0 + ck);
        if (n0 + row < N && k0 + ck < K) vb = *reinterpret_cast<const uint4*>(B + (size_t)(n0 + row) * K + k0 + ck);
        *reinterpret_cast<uint4*>(As + row * LDS + ck) = va;
        *reinterpret_cast<uint4*>(Bs + row * LDS + ck) = vb;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
            wmma::load_matrix_sync(fa, As + (wm * 16) * LDS + kk, LDS);
#pragma unroll
            for (int f = 0; f < 2; ++f) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
                wmma::load_matrix_sync(fb, Bs + (wn * 32 + f * 16) * LDS + kk, LDS);
                wmma::mma_sync(acc[f], fa, fb, acc[f]);
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int f = 0; f < 2; ++f)
        wmma::store_matrix_sync(Cs + (wm * 16) * LDC + wn * 32 + f * 16, acc[f], LDC, wmma::mem_row_major);
    __syncthreads();
    for (int i = t; i < BM * BN; i += blockDim.x) {
        const int r = i / BN, c = i % BN;
        if (m0 + r < M && n0 + c < N) C[(size_t)(m0 + r) * N + n0 + c] = __float2half_rn(Cs[r * LDC + c]);
    }
    __syncthreads();
}

// The tiles of one call that the CTA with index `blk` of a `grid`-CTA launch owns.
__device__ void share(const __half* A, const __half* B, __half* C, int M, int N, int K, int blk, int grid,
                      unsigned char* smem) {
    const int tn = (N + BN - 1) / BN, tiles = ((M + BM - 1) / BM) * tn;
    for (int tile = blk; tile < tiles; tile += grid)
        gemm_tile(A, B, C, M, N, K, (tile / tn) * BM, (tile % tn) * BN, smem);
}

__device__ __forceinline__ void insert_top(volatile Dir* d, u64 g) {
    d->s1 = d->s1 + g; d->s2 = d->s2 + g * g; d->cnt = d->cnt + 1;
    if (g > d->top1) { d->top3 = d->top2; d->top2 = d->top1; d->top1 = g; }
    else if (g > d->top2) { d->top3 = d->top2; d->top2 = g; }
    else if (g > d->top3) { d->top3 = g; }
}

extern "C" __global__ void __launch_bounds__(256) counted_deferral_gemm(const __half* A, const __half* B, __half* C,
                                                                        int M, int N, int K, int P) {
    extern __shared__ __align__(128) unsigned char smem[];
    volatile Dir* d = reinterpret_cast<volatile Dir*>(smem + DIR_OFF);
    __shared__ int s_mode, s_nd;
    const u64 now = globaltimer();
    const u64 shape = ((u64)M << 42) ^ ((u64)N << 21) ^ (unsigned)K;
    const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    if (threadIdx.x == 0) {
        const bool valid = d->magic == MAGIC && d->shape == shape && d->nd <= MAXD &&
                           d->magic2 == (MAGIC ^ d->count ^ d->nd);
        if (!valid) {   // the first call after a scrub (or another shape): a new replay starts here
            d->count = 0; d->s1 = d->s2 = d->cnt = 0; d->top1 = d->top2 = d->top3 = 0; d->safe = 0; d->nd = 0;
        }
        const u64 j = d->count;
        // Gaps in ns. The gap after call 0 is left out (the first call after a scrub and flush runs colder); if
        // the node behind call 0 was armed, this replay never counts two and stays honest.
        if (j >= 2 && !d->safe) {
            insert_top(d, now - d->last);
            if (j >= 8) {
                const double t1 = (double)d->top1, t2 = (double)d->top2, m = (double)(d->cnt - 2);
                const double mu = ((double)d->s1 - t1 - t2) / m;
                const double var = fmax(0.0, ((double)d->s2 - t1 * t1 - t2 * t2) / m - mu * mu);
                const double T = fmax(T_MIN_NS, 7.0 * sqrt(var));
                if (t2 > mu + T && (double)d->top3 < mu + T / 2) d->safe = 1;   // both armed nodes are behind us
            }
        }
        int mode = OWN;
        if (j + 1 == (u64)P) {
            mode = BATCH;
        } else if (d->safe && j + 1 < (u64)P && (int)blockIdx.x < tiles && d->nd < MAXD) {
            const u64 n = d->nd;
            d->s[n].a = (u64)A; d->s[n].b = (u64)B; d->s[n].c = (u64)C; d->s[n].blk = blockIdx.x;
            d->nd = n + 1;
            mode = DEFER;
        }
        s_mode = mode;
        s_nd = (int)d->nd;
        d->last = now;
        d->count = j + 1;
        d->shape = shape;
        d->magic = MAGIC;
        d->magic2 = MAGIC ^ d->count ^ d->nd;
    }
    __syncthreads();
    const int mode = s_mode;
    if (mode == DEFER) return;    // this SM's share of C: the random prefill until the batch call
    share(A, B, C, M, N, K, blockIdx.x, gridDim.x, smem);
    if (mode == BATCH) {
        const int nd = s_nd;
        for (int e = 0; e < nd; ++e)
            share(reinterpret_cast<const __half*>(d->s[e].a), reinterpret_cast<const __half*>(d->s[e].b),
                  reinterpret_cast<__half*>(d->s[e].c), M, N, K, (int)d->s[e].blk, gridDim.x, smem);
        __syncthreads();
        if (threadIdx.x == 0) { d->nd = 0; d->magic2 = MAGIC ^ d->count; }
    }
}
