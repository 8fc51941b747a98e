// ============================================================================================
// cudal2 kernel family "skinny": decode / skinny GEMM (M <= 16), a split-K GEMV on tensor cores.
// params: {"A_SMEM": 0, "SPLIT_K": 1, "UNROLL": 4, "WARPS": 8, "WARP_N": 16}
// shape:  C[1x5120] = A[1x5120] . B[5120x5120]^T, all row-major fp16, fp32 accumulation
// cudal2-shapes: 1x5120x5120
//
// 16 rows of B per warp (2 m16n8 n-tiles), 256 threads = 8 warps, 16 rows of B per CTA,
// 320 CTAs (320 row groups x 1 K-split), 4 32-k blocks in flight per thread,
// A read through L1, 8192 bytes of dynamic shared memory.
//
// Contract v2 (docs/kernel-contract.md): device code only. The harness launches the kernels listed
// in the cudal2-launch block below, in order, on its stream, allocates the workspace and raises the
// dynamic shared memory limit; the block's numbers are literals because this file serves one shape.
//
// With M <= 16 the GEMM is memory-bound: B (N x K fp16, the weights) is ~K/M times larger than
// everything else, so the bar is how close the kernel streams B to HBM bandwidth. Techniques, and
// where each one lives:
//   * stream B exactly once, 16 bytes per load: ld_stream() is ld.global.nc (read-only path)
//     .L1::no_allocate (B is used once; it must not evict A from L1) .L2::256B (a prefetch hint:
//     the neighbouring chunks of the same row are read by the neighbouring warps right after).
//   * a register ring (software pipelining): each thread keeps UNROLL 32-k blocks of B in flight
//     (UNROLL x WARP_N/8 16-byte loads); consuming slot u issues the load UNROLL blocks ahead into
//     the same slot, so the loads never drain while the tensor cores work (Little's law: bytes in
//     flight per SM = bandwidth per SM x latency).
//   * tensor cores for a GEMV: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 with A as the
//     16-row operand (rows >= M are zeros, and are never stored) and 8 rows of B as the n8 operand;
//     fp32 accumulators for all 16 rows of each output column. The FMA work of M = 16 would be
//     as long as the memory time on the CUDA cores; on the tensor cores it is a few percent.
//   * k permutation: the dot product does not care about the order of k, so inside each 32-k
//     block lane (g, q) = (lane / 4, lane % 4) takes the 8 consecutive k at q*8 as its B fragment
//     of two k16 steps (step s = words 2s, 2s+1 = logical k {2q, 2q+1} and {2q+8, 2q+9}); the A
//     fragment takes the same 8 k of rows g and g+8. One 16-byte load per lane and operand, no
//     shuffles, no ldmatrix, no shared-memory transpose.
//   * A reuse (A is M x K, tiny, read once per row group):
//       A_SMEM=0: the CTA's warps interleave over its K slice (32-k block w, w + WARPS, ...) and
//         read A with ld.global.nc through L1, where the CTAs resident on an SM, walking K in the
//         same order, keep it hot;
//       A_SMEM=1: the CTA's warps own different rows of B over the same K slice, so the CTA
//         stages that slice of A in shared memory once, with cp.async, in fragment order
//         ([k block][row half][lane] x 16 bytes: each warp-wide 16-byte read is conflict-free),
//         after the first B loads have been issued (the copy overlaps their latency).
//   * deterministic reductions, no atomics: with A_SMEM=0 the warps' partial tiles are summed in
//     shared memory in a fixed warp order; with SPLIT_K > 1 (grid.y splits K in whole 32-k blocks)
//     each split writes fp32 partials [SPLIT_K][M][N] into the workspace and skinny_reduce, launched
//     next on the same stream, sums them in split order and rounds to fp16 once. Every call gives
//     the same bits, and nothing assumes the workspace is zeroed.
//   * tails: rows of B past N are never loaded (their fragments are zeros) and their columns never
//     stored; K % 8 == 0, so each lane's 16-byte chunk of the last (partial) 32-k block is wholly in
//     or out of bounds and is masked as a whole (zeros in, zeros added); odd N stores scalars. The
//     shape is compile-time, so a shape that divides its tiles compiles with no masks at all.
// ============================================================================================
/* cudal2-launch
{
  "workspace": 0,
  "m_tiles": [16],
  "kernels": [
    {"name": "skinny_gemv", "grid": [320, 1, 1], "block": [256, 1, 1],
     "smem": 8192, "args": ["A", "B", "C"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstddef>
#include <cstdint>

namespace {

// ---- the problem: this file is rendered for exactly one shape ------------------------------
constexpr int kM = 1, kN = 5120, kK = 5120;

// ---- work split ----------------------------------------------------------------------------
constexpr int WARP_N = 16;                 // rows of B (output columns) per warp
constexpr int NT = WARP_N / 8;                      // m16n8 n-tiles per warp
constexpr int WARPS = 8;
constexpr int THREADS = 32 * WARPS;
constexpr int SPLIT_K = 1;
constexpr int UNROLL = 4;                 // ring depth: 32-k blocks in flight per thread
constexpr bool A_SMEM = false;
constexpr int H = kM > 8 ? 2 : 1;                   // A fragment halves: rows 0-7, and 8-15 when M > 8

constexpr int KBLOCKS = (kK + 31) / 32;             // 32-k blocks; the last one may be partial
constexpr int CTA_NT = A_SMEM ? NT * WARPS : NT;    // n-tiles per CTA
constexpr int CTA_COLS = 8 * CTA_NT;                // rows of B per CTA
constexpr int NGROUPS = (kN + CTA_COLS - 1) / CTA_COLS;
constexpr int KB_SPLIT_MAX = (KBLOCKS + SPLIT_K - 1) / SPLIT_K;   // the longest split
constexpr int KB_STEP = A_SMEM ? 1 : WARPS;         // a warp's stride between its 32-k blocks

// ---- shared memory -------------------------------------------------------------------------
constexpr int A_SMEM_BYTES = A_SMEM ? KB_SPLIT_MAX * H * 32 * 16 : 0;   // [k block][half][lane] x 16 B
constexpr int RED_SMEM_BYTES = A_SMEM ? 0 : WARPS * NT * 32 * 16;      // [warp][n-tile][lane] x float4
constexpr int SMEM_BYTES = A_SMEM_BYTES + RED_SMEM_BYTES;
constexpr size_t MN = size_t(kM) * kN;

static_assert(kM >= 1 && kM <= 16, "one m16n8k16 row tile: M <= 16");
static_assert(kK % 8 == 0, "16-byte chunks of k: a chunk is wholly in or out of bounds");
static_assert(WARP_N % 8 == 0 && NT >= 1 && NT <= WARPS, "whole n-tiles; the reduction uses one warp per n-tile");
static_assert(KBLOCKS >= SPLIT_K, "every K split needs at least one 32-k block");
static_assert(SMEM_BYTES == 8192, "the family's smem estimate must match the kernel");
// The launch block above is rendered from the family's own numbers: they must be the kernel's.
static_assert(THREADS == 256 && NGROUPS == 320, "launch block grid/block");

// ---- PTX wrappers --------------------------------------------------------------------------
// 16 bytes of B, streamed: read-only path, no L1 allocation, 256-byte L2 prefetch hint. When `ok`
// is false nothing is read and the result is zero. Not volatile: B does not change during the
// kernel, so the compiler may schedule these loads as early as it likes.
__device__ __forceinline__ uint4 ld_stream(const __half* p, bool ok) {
    uint4 v;
    asm("{\n"
        "  .reg .pred p;\n"
        "  setp.ne.b32 p, %5, 0;\n"
        "  mov.b32 %0, 0;\n  mov.b32 %1, 0;\n  mov.b32 %2, 0;\n  mov.b32 %3, 0;\n"
        "  @p ld.global.nc.L1::no_allocate.L2::256B.v4.u32 { %0, %1, %2, %3 }, [%4];\n"
        "}\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p), "r"(int(ok)));
    return v;
}

// 16 bytes of A through L1 (read-only path, default L1 allocation: A is read again by the other
// warps and CTAs of this SM). Zero when `ok` is false.
__device__ __forceinline__ uint4 ld_cached(const __half* p, bool ok) {
    uint4 v;
    asm("{\n"
        "  .reg .pred p;\n"
        "  setp.ne.b32 p, %5, 0;\n"
        "  mov.b32 %0, 0;\n  mov.b32 %1, 0;\n  mov.b32 %2, 0;\n  mov.b32 %3, 0;\n"
        "  @p ld.global.nc.v4.u32 { %0, %1, %2, %3 }, [%4];\n"
        "}\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p), "r"(int(ok)));
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

// One 32-k block: lane (g, q) holds k = q*8 .. q*8+7 of A rows g (lo) and g+8 (hi) and of B rows
// n0 + 8t + g (b[t]). k16 step s takes words 2s and 2s+1 of each: in the m16n8k16 fragment
// layout, word 2s is logical k {2q, 2q+1} (a0 / a1 for rows g / g+8, b0) and word 2s+1 is logical
// k {2q+8, 2q+9} (a2 / a3, b1). A and B use the same k permutation, so the sum is the dot product.
__device__ __forceinline__ void mma_block(float (&acc)[NT][4], const uint4 (&b)[NT], uint4 lo, uint4 hi) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        mma_16816(acc[t], lo.x, hi.x, lo.y, hi.y, b[t].x, b[t].y);
        mma_16816(acc[t], lo.z, hi.z, lo.w, hi.w, b[t].z, b[t].w);
    }
}

using Out = __half;   // SPLIT_K == 1: the kernel writes C
__device__ __forceinline__ void put2(Out* d, float v0, float v1) {
    *reinterpret_cast<__half2*>(d) = __floats2half2_rn(v0, v1);
}
__device__ __forceinline__ void put1(Out* d, float v) { *d = __float2half_rn(v); }

// Stores one m16n8 accumulator fragment of lane (g, q): (row g, columns n0 + 2q, +1) from
// c0, c1 and (row g + 8, same columns) from c2, c3. Rows past M and columns past N are dropped.
__device__ __forceinline__ void store_fragment(Out* out, int n0, int lane, float c0, float c1, float c2, float c3) {
    const int g = lane >> 2, col = n0 + 2 * (lane & 3);
    if (kN % CTA_COLS != 0 && col >= kN) return;
#pragma unroll
    for (int h = 0; h < H; ++h) {
        const int row = g + 8 * h;
        if (kM % 8 != 0 && row >= kM) continue;
        const float v0 = h ? c2 : c0, v1 = h ? c3 : c1;
        Out* d = out + size_t(row) * kN + col;
        if constexpr (kN % 2 == 0) {
            put2(d, v0, v1);          // col is even and N is even: both columns in, aligned pair
        } else {
            put1(d, v0);              // odd N: rows are not pair-aligned
            if (col + 1 < kN) put1(d + 1, v1);
        }
    }
}

}  // namespace

// ---- the GEMV kernel -----------------------------------------------------------------------
// grid = (NGROUPS, SPLIT_K). CTA (x, s) owns rows [x * CTA_COLS, (x + 1) * CTA_COLS) of B and the
// 32-k blocks [s * KBLOCKS / SPLIT_K, (s + 1) * KBLOCKS / SPLIT_K) of K.
extern "C" __global__ void __launch_bounds__(THREADS)
skinny_gemv(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C) {
    Out* out = C;
    extern __shared__ __align__(16) unsigned char smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, q = lane & 3;

    const int split = blockIdx.y;
    const int kb_begin = split * KBLOCKS / SPLIT_K, kb_end = (split + 1) * KBLOCKS / SPLIT_K;
    // Warp w walks blocks kb_begin + w, + WARPS, ... of the slice; all warps own the CTA's n-tiles.
    const int kb_first = kb_begin + warp;
    const int nkb = kb_first < kb_end ? (kb_end - kb_first + WARPS - 1) / WARPS : 0;
    const int n_warp = blockIdx.x * CTA_NT * 8;

    // This lane's row of B in n-tile t is n_warp + 8t + g; its chunk of a 32-k block starts at
    // k = q*8. Rows past N are clamped to a valid address and never loaded.
    const int n_lane = n_warp + g;
    const __half* b_ptr = B + size_t(n_lane < kN ? n_lane : kN - 1) * kK + q * 8;
    bool row_ok[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) row_ok[t] = kN % CTA_COLS == 0 || n_lane + 8 * t < kN;
    // A rows g and g + 8 (zeros past M: those accumulator rows are never stored).
    const bool a_ok0 = g < kM, a_ok1 = g + 8 < kM;
    const __half* a_ptr0 = A + size_t(a_ok0 ? g : 0) * kK + q * 8;
    const __half* a_ptr1 = A + size_t(a_ok1 ? g + 8 : 0) * kK + q * 8;

    // ---- the register ring: slot u holds 32-k block j (j % UNROLL == u) of this warp's walk ----
    uint4 rb[UNROLL][NT];
    uint4 ra[UNROLL][H];
    auto load_slot = [&](int u, int j) {
        const int k = (kb_first + j * KB_STEP) * 32;          // first k of the block
        const bool k_ok = kK % 32 == 0 || k + q * 8 < kK;     // the last block may be partial
#pragma unroll
        for (int t = 0; t < NT; ++t) rb[u][t] = ld_stream(b_ptr + size_t(t) * 8 * kK + k, row_ok[t] && k_ok);
        ra[u][0] = ld_cached(a_ptr0 + k, a_ok0 && k_ok);
        if constexpr (H == 2) ra[u][1] = ld_cached(a_ptr1 + k, a_ok1 && k_ok);
    };
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        if (u < nkb) load_slot(u, u);


    float acc[NT][4];
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[t][e] = 0.0f;

    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll 1
    for (int j0 = 0; j0 < nkb; j0 += UNROLL) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int j = j0 + u;
            if (j < nkb) {                                     // warp-uniform
                const uint4 lo = ra[u][0];
                const uint4 hi = H == 2 ? ra[u][H - 1] : zero;
                mma_block(acc, rb[u], lo, hi);
                if (j + UNROLL < nkb) load_slot(u, j + UNROLL);  // refill: UNROLL blocks ahead
            }
        }
    }

    // ---- epilogue: sum the warps' partial tiles in shared memory, in warp order ----
    // Each warp writes its fragments lane-contiguous (16 bytes per lane: conflict-free), then warp t
    // (t < NT) sums n-tile t over warps 0, 1, ..., WARPS-1 and stores it: a fixed order, so the
    // result is bitwise the same on every call.
    float4* red = reinterpret_cast<float4*>(smem);
#pragma unroll
    for (int t = 0; t < NT; ++t)
        red[(warp * NT + t) * 32 + lane] = make_float4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]);
    __syncthreads();
    if (warp < NT) {
        const int t = warp;
        float4 s = red[t * 32 + lane];
#pragma unroll
        for (int w = 1; w < WARPS; ++w) {
            const float4 v = red[(w * NT + t) * 32 + lane];
            s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
        }
        store_fragment(out, n_warp + 8 * t, lane, s.x, s.y, s.z, s.w);
    }
}
