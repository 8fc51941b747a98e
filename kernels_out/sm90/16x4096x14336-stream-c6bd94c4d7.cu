// ============================================================================================
// cudal2 kernel family "stream": decode GEMV (M <= 16) that streams B with bulk copies.
// params: {"A_RES": 0, "GRID": 132, "KC": 2048, "KSPLIT": 2, "ROWS": 32, "SPLIT_ROWS": 0, "STAGES": 2, "WARPS": 4}
// shape:  C[16x4096] = A[16x14336] . B[4096x14336]^T, all row-major fp16, fp32 accumulation
// cudal2-shapes: 16x4096x14336
//
// 64 persistent clusters of 2 CTAs (GRID 132), each CTA 4 consumer warps + 1 producer warp; 896 units of
// 32 rows of B x 2048 k (128 row blocks x 7 k chunks), whole row blocks per CTA;
// 2 stages of 101376 bytes, A copied with each stage; 219176 bytes of dynamic shared memory.
//
// Contract v2 (docs/kernel-contract.md): device code only. The harness launches the kernels listed
// in the cudal2-launch block below, in order, on its stream, allocates the workspace and raises the
// dynamic shared memory limit; the block's numbers are literals because this file serves one shape.
//
// With M <= 16 the GEMM is memory-bound: B (N x K fp16, the weights) is ~K/M times larger than
// everything else, so the bar is how close the kernel streams B to HBM bandwidth. Techniques, and
// where each one lives:
//   * bulk copies (cp.async.bulk, the TMA unit's 1-D form): a row of B is contiguous in memory, so
//     one instruction moves a whole row segment of KC k (KC*2 bytes) into shared memory. One
//     producer warp keeps STAGES stages in flight (tens of KB per SM: Little's law asks
//     bandwidth per SM x latency, ~25-35 KB on an H100), and the consumer warps issue no global
//     loads at all, so no load slots or registers are spent holding bytes in flight. Copies must
//     be large: on the H100 an SM's copy unit took ~75 cycles a copy, so 512-byte copies capped B
//     at ~1.5 TB/s and 2 KB ones reached 2.9 TB/s (eval/README.md).
//   * A kept (A_RES=1): A's k chunks are copied once, each beside the first stage that needs it and
//     on a barrier of its own (a_bar[kc]), so the first stages do not wait for all of A.
//   * mbarrier pipeline: full[s] completes when the producer's arrive.expect_tx and the stage's
//     bytes have landed (complete_tx); empty[s] completes when every consumer warp has read it.
//   * padded rows: each row of a stage starts at a stride = 64 (mod 128) bytes, so the 8 lanes of
//     a quarter-warp (rows g, g+1 x four 16-byte chunks) read 8 distinct 16-byte bank groups.
//   * tensor cores for a GEMV: mma.sync m16n8k16 with A as the 16-row operand (rows >= M are zero
//     registers, never loaded, never stored) and 8 rows of B as the n8 operand, fp32 accumulators.
//   * k permutation: lane (g, q) takes the 8 consecutive k at q*8 of a 32-k block as its fragment
//     of two k16 steps (word 2s: logical k {2q, 2q+1}; word 2s+1: {2q+8, 2q+9}); A and B share the
//     permutation, so the sum is the dot product, and every fragment is one 16-byte shared load.
//   * balance without tails (SPLIT_ROWS=1, stream-K for a GEMV): the units (row block, k chunk)
//     are numbered row block first and CTA c streams units [c*U/G, (c+1)*U/G), so every CTA moves
//     the same bytes +- one unit. A row block cut by a CTA boundary is finished by stream_fixup,
//     launched next: each CTA leaves its partial tile of the cut block(s) in the workspace
//     (slot 0: its first row block, slot 1: its last) and the fixup sums them in CTA order. With
//     SPLIT_ROWS=0 a CTA owns whole row blocks (no fixup, no workspace; tails of up to one block).
//   * k split across a cluster (KSPLIT > 1): where B has too few row blocks to give every SM
//     work, each unit's k is cut into KSPLIT slices, one per CTA of a cluster; a cluster streams
//     what one CTA would, so twice (four times) the SMs read B, and each reads only its slice of A
//     (at M = 16, A's rows are as many bytes per k as 16 rows of B). The CTAs of rank >= 1 push
//     their partial tiles into rank 0's shared memory with st.async (distributed shared memory,
//     completing on an mbarrier rank 0 armed with the bytes before a cluster barrier), and rank 0
//     sums them in rank order and stores: no workspace, no second launch, the same bits every call.
//   * deterministic: partial tiles of a CTA's warps are summed in shared memory in warp order,
//     those of CTAs in CTA order; no atomics, and nothing assumes the workspace is zeroed.
//   * tails: rows of B past N are not copied (their columns are never stored); the last k chunk
//     is shorter, and its 8-k groups past K read as zeros (K % 8 == 0: a group is wholly in or out).
// ============================================================================================
/* cudal2-launch
{
  "workspace": 0,
  "m_tiles": [16],
  "kernels": [
    {"name": "stream_gemv", "grid": [128, 1, 1], "block": [160, 1, 1], "cluster": [2, 1, 1],     "smem": 219176, "args": ["A", "B", "C"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstddef>
#include <cstdint>

namespace {

// ---- the problem: this file is rendered for exactly one shape ------------------------------
constexpr int kM = 16, kN = 4096, kK = 14336;

// ---- work split ----------------------------------------------------------------------------
constexpr int ROWS = 32;                     // rows of B per row block
constexpr int NT = ROWS / 8;                        // m16n8 n-tiles per row block
constexpr int KC = 2048;                         // k per unit
constexpr int KS = 2;                      // CTAs per cluster, each streaming one k slice of every unit
constexpr int KCS = KC / KS;                        // k per stage of one CTA
constexpr int STAGES = 2;
constexpr int WARPS = 4;                   // consumer warps; warp WARPS is the producer
constexpr int THREADS = 32 * (WARPS + 1);
constexpr bool A_RES = false;   // A copied once, whole, and kept
constexpr bool SPLIT_ROWS = false;
constexpr int H = kM > 8 ? 2 : 1;                   // A fragment halves: rows 0-7, and 8-15 when M > 8
constexpr int NRB = (kN + ROWS - 1) / ROWS;         // row blocks
constexpr int NKC = (kK + KC - 1) / KC;             // k chunks per row block
constexpr long long UNITS = (long long)NRB * NKC;
constexpr int CTAS = 64;

// ---- shared memory (bytes): [A][stages][reduction][partials (KS > 1)][barriers] ---------------
constexpr int pad_row(int bytes) { return (bytes + 127) / 128 * 128 + 64; }   // 64 (mod 128): see above
constexpr int B_STRIDE = pad_row(KCS * 2);
constexpr int A_STRIDE = A_RES ? pad_row(kK * 2) : B_STRIDE;
constexpr int A_BYTES = A_RES ? kM * A_STRIDE : 0;
constexpr int STAGE_BYTES = ROWS * B_STRIDE + (A_RES ? 0 : kM * A_STRIDE);
constexpr int RED_BYTES = WARPS * NT * 32 * 16;     // [warp][n-tile][lane] x float4
constexpr int RB_MAX = 14 / NKC;   // row blocks of the busiest cluster (KS > 1: whole blocks)
constexpr int PART_BYTES = KS > 1 ? RB_MAX * NT * 32 * 16 : 0;     // a CTA's partial tiles, [row block][n-tile][lane]
constexpr int XPART_BYTES = (KS - 1) * PART_BYTES;  // rank 0: the other ranks' partial tiles, in rank order
constexpr int BAR_BYTES = (2 * STAGES + (A_RES ? NKC : 0) + (KS > 1 ? 1 : 0)) * 8;
constexpr int SMEM_BYTES = A_BYTES + STAGES * STAGE_BYTES + RED_BYTES + PART_BYTES + XPART_BYTES + BAR_BYTES;

static_assert(kM >= 1 && kM <= 16, "one m16n8k16 row tile: M <= 16");
static_assert(kK % 8 == 0, "16-byte chunks of k: a group of 8 k is wholly in or out of bounds");
static_assert(KC % 32 == 0 && ROWS % 8 == 0 && NT <= WARPS, "whole 32-k blocks and n-tiles; one summing warp per n-tile");
static_assert(A_STRIDE % 16 == 0 && B_STRIDE % 16 == 0 && STAGE_BYTES % 16 == 0, "bulk copies land 16-byte aligned");
static_assert(CTAS >= 1 && CTAS <= UNITS, "every CTA streams at least one unit");
static_assert(KS == 1 || (!A_RES && !SPLIT_ROWS && KC % (32 * KS) == 0),
              "a k split takes A per stage, whole row blocks and whole 32-k blocks per slice");
// The launch block above is rendered from the family's own numbers: they must be the kernel's.
static_assert(SMEM_BYTES == 219176 && THREADS == 160, "launch block smem and block");
static_assert(NRB == 128 && NKC == 7, "the family's unit count");

// ---- the partition: CTA c streams units [first_unit(c), first_unit(c + 1)) --------------------
__host__ __device__ constexpr long long first_unit(int c) {
    return SPLIT_ROWS ? (long long)c * UNITS / CTAS : (long long)c * NRB / CTAS * NKC;
}
// The CTA that streams unit u: the largest c with first_unit(c) <= u (a binary search: CTAS is
// small, and a closed form would have to match first_unit's rounding in both modes).
__device__ __forceinline__ int owner(long long u) {
    int lo = 0, hi = CTAS - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (first_unit(mid) <= u) lo = mid; else hi = mid - 1;
    }
    return lo;
}

// ---- PTX wrappers --------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
// Arrive (count 1) and add `bytes` to the transaction count the current phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
// Block until the phase with parity `parity` has completed (a fresh barrier's "previous" phase,
// parity 1, counts as complete: the producer's first pass over the ring does not wait).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
// `bytes` (a multiple of 16) from global `src` to shared `dst`, completing on `bar`.
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
// Named barrier over the consumer warps only (id 0 is __syncthreads; the producer never joins).
__device__ __forceinline__ void consumers_sync() {
    asm volatile("bar.sync 1, %0;" :: "n"(32 * WARPS) : "memory");
}
// Every thread of every CTA of the cluster; release/acquire: what each CTA wrote before it (its
// barriers' init) is visible to the others after it.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
// The shared::cluster address of this CTA's `addr` in the cluster's CTA `rank` (same layout).
__device__ __forceinline__ uint32_t peer_addr(uint32_t addr, uint32_t rank) {
    uint32_t out;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(rank));
    return out;
}
// 16 bytes into a peer CTA's shared memory, completing as transaction bytes on its mbarrier.
__device__ __forceinline__ void push16(uint32_t peer, float4 v, uint32_t peer_bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], { %1, %2, %3, %4 }, [%5];"
                 :: "r"(peer), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(peer_bar) : "memory");
}
__device__ __forceinline__ uint4 lds128(uint32_t addr) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 { %0, %1, %2, %3 }, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
    return v;
}

// d += a (16x16, row) * b (16x8, col), fp16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                          uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{ %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Stores one m16n8 accumulator fragment of lane (g, q): (row g, columns n0 + 2q, +1) from
// c0, c1 and (row g + 8, same columns) from c2, c3. Rows past M and columns past N are dropped.
__device__ __forceinline__ void store_fragment(__half* C, int n0, int lane, float4 c) {
    const int g = lane >> 2, col = n0 + 2 * (lane & 3);
    if (kN % ROWS != 0 && col >= kN) return;
#pragma unroll
    for (int h = 0; h < H; ++h) {
        const int row = g + 8 * h;
        if (kM % 8 != 0 && row >= kM) continue;
        const float v0 = h ? c.z : c.x, v1 = h ? c.w : c.y;
        __half* d = C + size_t(row) * kN + col;
        if constexpr (kN % 2 == 0) {
            *reinterpret_cast<__half2*>(d) = __floats2half2_rn(v0, v1);   // an aligned pair, both in
        } else {
            d[0] = __float2half_rn(v0);                                     // odd N: rows not pair-aligned
            if (col + 1 < kN) d[1] = __float2half_rn(v1);
        }
    }
}

}  // namespace

// ---- the GEMV kernel -----------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(THREADS, 1)
stream_gemv(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C) {
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t base = smem_u32(smem);
    const uint32_t a_base = base, stage_base = base + A_BYTES;
    float4* red = reinterpret_cast<float4*>(smem + A_BYTES + STAGES * STAGE_BYTES);
    const uint32_t full_bar = base + A_BYTES + STAGES * STAGE_BYTES + RED_BYTES + PART_BYTES + XPART_BYTES;
    const uint32_t empty_bar = full_bar + 8 * STAGES, a_bar = empty_bar + 8 * STAGES;   // a_bar[NKC] if A_RES
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int cta = blockIdx.x / KS, rank = blockIdx.x % KS;   // KS > 1: the cluster, and this CTA's k slice
    const long long u_begin = first_unit(cta), u_end = first_unit(cta + 1);
    float4* part = red + RED_BYTES / 16;              // [row block][n-tile][lane]: this CTA's partial tiles
    const uint32_t xpart = base + A_BYTES + STAGES * STAGE_BYTES + RED_BYTES + PART_BYTES;   // rank 0 receives here
    const uint32_t x_bar = a_bar;                     // rank 0: completes when every other rank's tiles landed
    const int rbs = int((u_end - u_begin) / NKC);     // whole row blocks of this cluster

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full_bar + 8 * s, 1);          // the producer's arrive.expect_tx
            mbar_init(empty_bar + 8 * s, WARPS);     // one arrive per consumer warp
        }
        if constexpr (A_RES)
            for (int kc = 0; kc < NKC; ++kc) mbar_init(a_bar + 8 * kc, 1);
        mbar_init(x_bar, 1);
        // armed with every byte the other ranks will push, before they can push any (the cluster
        // barrier below): its phase completes only when all of them have landed
        if (rank == 0) mbar_arrive_expect_tx(x_bar, uint32_t((KS - 1) * rbs * NT * 32 * 16));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();

    if (warp == WARPS) {
        // ---- producer warp: lane 0 arms each stage, then the lanes issue its row copies ----
        for (long long u = u_begin; u < u_end; ++u) {
            const int i = int(u - u_begin), s = i % STAGES;
            const int rb = int(u / NKC), kc = int(u % NKC);
            const int k0 = kc * KC + rank * KCS;                                       // this CTA's k slice
            const int len = (kK - k0 < KCS ? (kK - k0 > 0 ? kK - k0 : 0) : KCS) * 2;    // bytes per row (0: past K)
            const int rows = (kN - rb * ROWS < ROWS ? kN - rb * ROWS : ROWS);         // rows of B in bounds
            if (A_RES && i < NKC) {   // the first NKC units meet every k chunk once: copy A's
                if (lane == 0) mbar_arrive_expect_tx(a_bar + 8 * kc, uint32_t(kM) * len);
                __syncwarp();
                for (int r = lane; r < kM; r += 32)
                    bulk_copy(a_base + r * A_STRIDE + k0 * 2, A + size_t(r) * kK + k0, len, a_bar + 8 * kc);
            }
            mbar_wait(empty_bar + 8 * s, ((i / STAGES) & 1) ^ 1);
            if (lane == 0) mbar_arrive_expect_tx(full_bar + 8 * s, uint32_t(rows + (A_RES ? 0 : kM)) * len);
            __syncwarp();
            const uint32_t st = stage_base + s * STAGE_BYTES;
            if (len == 0) continue;   // a k slice past K: the stage's barrier completes with no bytes
            for (int r = lane; r < rows; r += 32)
                bulk_copy(st + r * B_STRIDE, B + (size_t(rb) * ROWS + r) * kK + k0, len, full_bar + 8 * s);
            if constexpr (!A_RES)
                for (int r = lane; r < kM; r += 32)
                    bulk_copy(st + ROWS * B_STRIDE + r * A_STRIDE, A + size_t(r) * kK + k0, len, full_bar + 8 * s);
        }
        return;
    }

    // ---- consumer warps: warp w takes the 32-k blocks w, w + WARPS, ... of each stage ----
    const int g = lane >> 2, q = lane & 3;
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    float acc[NT][4];
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[t][e] = 0.0f;

    for (long long u = u_begin; u < u_end; ++u) {
        const int i = int(u - u_begin), s = i % STAGES;
        const int rb = int(u / NKC), kc = int(u % NKC);
        const int k0 = kc * KC + rank * KCS, klen = kK - k0 < KCS ? (kK - k0 > 0 ? kK - k0 : 0) : KCS;
        const uint32_t st = stage_base + s * STAGE_BYTES;
        // this lane's 16 bytes of row g (B) of each n-tile, and of A rows g and g + 8
        const uint32_t b_lane = st + g * B_STRIDE + q * 16;
        const uint32_t a_lane = (A_RES ? a_base + k0 * 2 : st + ROWS * B_STRIDE) + g * A_STRIDE + q * 16;
        if (A_RES && i < NKC) mbar_wait(a_bar + 8 * kc, 0);   // A's chunk kc, copied once
        mbar_wait(full_bar + 8 * s, (i / STAGES) & 1);
#pragma unroll 2
        for (int kb = warp; kb < (klen + 31) / 32; kb += WARPS) {
            const bool k_ok = kK % KC == 0 || kb * 32 + q * 8 < klen;   // (lane-varying only in the last chunk)
            uint4 b[NT];
#pragma unroll
            for (int t = 0; t < NT; ++t) b[t] = k_ok ? lds128(b_lane + t * 8 * B_STRIDE + kb * 64) : zero;
            const uint4 lo = (k_ok && g < kM) ? lds128(a_lane + kb * 64) : zero;
            const uint4 hi = (H == 2 && k_ok && g + 8 < kM) ? lds128(a_lane + 8 * A_STRIDE + kb * 64) : zero;
#pragma unroll
            for (int t = 0; t < NT; ++t) {
                mma_16816(acc[t], lo.x, hi.x, lo.y, hi.y, b[t].x, b[t].y);
                mma_16816(acc[t], lo.z, hi.z, lo.w, hi.w, b[t].z, b[t].w);
            }
        }
        __syncwarp();
        if (lane == 0) mbar_arrive(empty_bar + 8 * s);   // this warp is done reading stage s

        if (kc == NKC - 1 || u == u_end - 1) {
            // ---- the row block ends here (or this CTA's range does): sum the warps' tiles ----
#pragma unroll
            for (int t = 0; t < NT; ++t) {
                red[(warp * NT + t) * 32 + lane] = make_float4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]);
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[t][e] = 0.0f;
            }
            consumers_sync();
            if (warp < NT) {
                float4 sum = red[warp * 32 + lane];
                for (int w = 1; w < WARPS; ++w) {
                    const float4 v = red[(w * NT + warp) * 32 + lane];
                    sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
                }
                const bool whole = (long long)rb * NKC >= u_begin && (long long)(rb + 1) * NKC <= u_end;
                // whole row blocks only: keep rank 0's tile, push the others' into rank 0 (rank order)
                const int slot = (int(rb - u_begin / NKC) * NT + warp) * 32 + lane;
                if (rank == 0) part[slot] = sum;
                else push16(peer_addr(xpart + uint32_t(((rank - 1) * RB_MAX * NT * 32 + slot) * 16), 0), sum,
                            peer_addr(x_bar, 0));
            }
            consumers_sync();   // red is written again at the next row block's end
        }
    }
    // rank 0: every rank's tiles of every row block, summed in rank order, then stored
    if (rank == 0 && warp < NT) {
        mbar_wait(x_bar, 0);
        const float4* xp = reinterpret_cast<const float4*>(smem + (xpart - base));
        for (int i = 0; i < rbs; ++i) {
            const int slot = (i * NT + warp) * 32 + lane;
            float4 sum = part[slot];
            for (int r = 1; r < KS; ++r) {
                const float4 v = xp[(r - 1) * RB_MAX * NT * 32 + slot];
                sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
            }
            store_fragment(C, int(u_begin / NKC + i) * ROWS + warp * 8, lane, sum);
        }
    }
}
