// ============================================================================================
// cudal2 kernel family "sm80": Ampere-style tensor-core HGEMM (mma.sync), runs on sm_80+.
// params: {"BK": 64, "BM": 32, "BN": 64, "GROUP_M": 4, "SPLIT_K": 1, "STAGES": 6, "WARPS_M": 2, "WARPS_N": 2}
// shape:  C[256x1024] = A[256x512] . B[1024x512]^T, all row-major fp16, fp32 accumulation
// cudal2-shapes: 256x1024x512
//
// Block tile 32x64x64, 128 threads = 2x2 warps, warp tile 16x32
// (1x4 mma tiles of 16x8), 6 pipeline stages, 128 CTAs (8x16 tiles x 1 K-splits),
// 73728 bytes of dynamic shared memory.
//
// Contract v2 (docs/kernel-contract.md): device code only. The harness launches the kernels listed
// in the cudal2-launch block below, in order, on its stream, allocates the workspace and raises the
// dynamic shared memory limit; the block's numbers are literals because this file serves one shape.
//
// Techniques, and where each one lives:
//   * tensor cores through inline PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32, fp32
//     accumulators in registers (mma_16816). A is MxK row-major = the "row" operand; B is NxK
//     row-major, i.e. K-major per output column = the "col" operand. No transposes anywhere.
//   * cp.async multistage pipeline: 16-byte cp.async.cg.shared.global copies fill a ring of
//     STAGES shared-memory tiles; STAGES-1 tiles are always in flight (commit_group per tile,
//     wait_group STAGES-2 before a tile is consumed), so global latency hides behind the MMAs.
//   * XOR-swizzled shared memory: the 16-byte chunk index of every smem row is XORed with a few
//     row bits (swizzle()), so the 8 row addresses of each ldmatrix phase hit 8 different
//     bank groups (no bank conflicts) without any padding.
//   * ldmatrix fragments: ldmatrix.sync.aligned.m8n8.x4 loads a 16x16 A fragment or two 8x16 B
//     fragments per instruction, already in the register layout mma.sync expects.
//   * register double-buffering: fragments for k16 sub-step s+1 are loaded while the MMAs of
//     sub-step s run (frag_a/frag_b[2]).
//   * grouped (swizzled) block raster for L2 reuse: CTAs walk GROUP_M block-rows at a time,
//     column by column, so CTAs running together share A rows and B columns in L2.
//   * split-K (SPLIT_K > 1): grid.y splits the K tiles; each split writes fp32 partials into the
//     workspace (SPLIT_K x M x N floats, declared in the launch block), and a second kernel,
//     launched after the first on the same stream, sums them in a fixed order (split 0, 1, ...):
//     deterministic, no atomics, no assumption that the workspace is zeroed.
//   * vectorized epilogue through shared memory: fp32 accumulators are rounded to fp16 once,
//     staged in (padded) smem, and written back with 16-byte stores where a row chunk is in
//     bounds (scalar masked tail otherwise).
//   * edges: loads at the M/N/K edges use the cp.async "zfill" form (src-size 0 writes zeros),
//     stores are masked. The shape is compile-time, so a dimension that divides its tile
//     compiles with no predication at all.
// ============================================================================================
/* cudal2-launch
{
  "workspace": 0,
  "m_tiles": [32],
  "kernels": [
    {"name": "sm80_hgemm", "grid": [128, 1, 1], "block": [128, 1, 1],
     "smem": 73728, "args": ["A", "B", "C"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstddef>
#include <cstdint>

namespace {

// ---- the problem: this file is rendered for exactly one shape ------------------------------
constexpr int kM = 256, kN = 1024, kK = 512;

// ---- tiling --------------------------------------------------------------------------------
constexpr int BM = 32, BN = 64, BK = 64;        // block tile
constexpr int WARPS_M = 2, WARPS_N = 2;
constexpr int THREADS = 32 * WARPS_M * WARPS_N;
constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile
constexpr int MI = WM / 16, NI = WN / 8;            // m16n8 mma tiles per warp
constexpr int KSTEPS = BK / 16;                     // k16 sub-steps per smem tile
constexpr int STAGES = 6;
constexpr int GROUP_M = 4;
constexpr int SPLIT_K = 1;

constexpr int TILES_M = (kM + BM - 1) / BM, TILES_N = (kN + BN - 1) / BN;
constexpr int KTILES = (kK + BK - 1) / BK;          // the last one may be partial (zero-filled)

// ---- shared memory -------------------------------------------------------------------------
constexpr int CPR = BK / 8;                         // 16-byte chunks per smem row
constexpr int SWZ_SHIFT = CPR == 8 ? 0 : 1;         // rows per 128-byte bank line: 1 (BK=64) or 2 (BK=32)
constexpr int A_STAGE = BM * BK, B_STAGE = BN * BK; // halves per stage
constexpr int PIPE_BYTES = STAGES * (A_STAGE + B_STAGE) * 2;
constexpr int LDC = BN + 8;                         // epilogue staging row (halves), padded by 16 bytes
constexpr int EPI_BYTES = SPLIT_K == 1 ? BM * LDC * 2 : 0;
constexpr int SMEM_BYTES = PIPE_BYTES > EPI_BYTES ? PIPE_BYTES : EPI_BYTES;
constexpr size_t MN = size_t(kM) * kN;

static_assert(CPR == 4 || CPR == 8, "the swizzle is written for 64- and 128-byte smem rows");
static_assert(WM % 16 == 0 && WN % 16 == 0, "ldmatrix.x4 covers 16 rows of A and 16 columns of B");
static_assert(KSTEPS % 2 == 0, "fragment double-buffer parity must repeat every smem tile");
static_assert(BM % WARPS_M == 0 && BN % WARPS_N == 0, "warps must tile the block");
static_assert(KTILES >= SPLIT_K, "every K split needs at least one K tile");
static_assert(SMEM_BYTES == 73728, "the family's smem estimate must match the kernel");
// The launch block above is rendered from the family's own numbers: they must be the kernel's.
static_assert(THREADS == 128 && TILES_M * TILES_N == 128, "launch block grid/block");

// ---- PTX wrappers --------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One 16-byte global->shared copy, bypassing L1 (.cg). When `valid` is false the source size
// is 0: nothing is read and the 16 destination bytes are zero-filled.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Wait until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Four 8x8 b16 matrices; lane i supplies the row address of matrix i/8, row i%8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 { %0, %1, %2, %3 }, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// d += a (16x16, row) * b (16x8, col), fp16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{ %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---- XOR-swizzled smem layout --------------------------------------------------------------
// A stage holds ROWS x BK halves, row-major, as CPR 16-byte chunks per row. Chunk c of row r is
// stored at chunk position c ^ ((r >> SWZ_SHIFT) & (CPR - 1)). One ldmatrix phase reads the same
// logical chunk from 8 consecutive rows (r0..r0+7, r0 a multiple of 8); those 8 rows span exactly
// 8 (BK=64) or 4 x 2 (BK=32) distinct 16-byte bank groups after the XOR: conflict-free.
__device__ __forceinline__ int swizzle(int row, int chunk) {  // -> offset in halves
    return row * BK + ((chunk ^ ((row >> SWZ_SHIFT) & (CPR - 1))) << 3);
}

// ---- global -> shared: one operand's tile, as 16-byte cp.async chunks -------------------------
// Thread tid copies chunk LD_CH = tid % CPR of tile rows LD_ROW + i * ROW_STEP (LD_ROW = tid / CPR),
// so consecutive threads read consecutive 16-byte pieces of a row (coalesced). The caller passes
// this thread's first source pointer and its first swizzled destination; later rows are constant
// offsets (when ROW_STEP is a multiple of 8 the swizzle XOR does not change between them).
// Because K % 8 == 0, each chunk is wholly in or wholly out of bounds: out-of-range chunks are
// zero-filled (zfill), and zeros add nothing to the dot products.
constexpr int ROW_STEP = THREADS / CPR;
static_assert(THREADS % CPR == 0, "every thread copies the same chunk column of its rows");

template <int ROWS, int LIMIT>
__device__ __forceinline__ void load_tile(uint32_t stage_base, const __half* __restrict__ src,
                                          const __half* __restrict__ matrix, int ld_row, int ld_ch, int grow, int gk) {
    constexpr int ITERS = (ROWS + ROW_STEP - 1) / ROW_STEP;
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
        if (ROWS % ROW_STEP == 0 || ld_row + i * ROW_STEP < ROWS) {
            const bool in = (LIMIT % ROWS == 0 || grow + i * ROW_STEP < LIMIT) && (kK % BK == 0 || gk < kK);
            const int dst = ROW_STEP % 8 == 0 ? swizzle(ld_row, ld_ch) + i * ROW_STEP * BK
                                              : swizzle(ld_row + i * ROW_STEP, ld_ch);
            // Out of bounds: src-size 0, and a known-valid address (the matrix base) all the same.
            cp_async_16(stage_base + dst * 2, in ? src + size_t(i) * ROW_STEP * kK : matrix, in);
        }
    }
}

// ---- grouped block raster ------------------------------------------------------------------
// Linear CTA id -> (tile row, tile col). Tiles are visited in groups of GROUP_M block-rows; inside
// a group the walk goes down a column first, so the GROUP_M x (a few) tiles resident at once
// reuse the same A rows and B columns from L2 instead of streaming a whole row of B each.
__device__ __forceinline__ void tile_of(int pid, int& tm, int& tn) {
    constexpr int PER_GROUP = GROUP_M * TILES_N;
    const int group = pid / PER_GROUP;
    const int first = group * GROUP_M;
    const int rows = TILES_M - first < GROUP_M ? TILES_M - first : GROUP_M;  // last group may be short
    const int in_group = pid - group * PER_GROUP;
    tm = first + in_group % rows;
    tn = in_group / rows;
}

}  // namespace

// ---- the GEMM kernel -----------------------------------------------------------------------
// grid = (TILES_M * TILES_N, SPLIT_K). Split s owns K tiles [s*KTILES/SPLIT_K, (s+1)*KTILES/SPLIT_K).
// SPLIT_K == 1: writes fp16 C.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
sm80_hgemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C) {
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t sA = smem_u32(smem);                        // STAGES x [BM][BK] (swizzled)
    const uint32_t sB = sA + STAGES * A_STAGE * 2;              // STAGES x [BN][BK] (swizzled)

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
    int tm, tn;
    tile_of(blockIdx.x, tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    const int split = blockIdx.y;
    const int kt_begin = split * KTILES / SPLIT_K;
    const int nkt = (split + 1) * KTILES / SPLIT_K - kt_begin;  // >= 1 (static_assert above)

    // ldmatrix row addresses (in this warp's part of the tile). A (x4 = 16 rows x 16 k):
    // lanes 0-15 -> rows 0-15 at k 0-7, lanes 16-31 -> rows 0-15 at k 8-15, giving a0..a3 of the
    // m16n8k16 A fragment. B (x4 = 16 n x 16 k): lanes 0-7 n 0-7 k 0-7 (b0 of n-tile 0), 8-15
    // n 0-7 k 8-15 (b1), 16-23 n 8-15 k 0-7 (b0 of n-tile 1), 24-31 n 8-15 k 8-15 (b1).
    const int a_row = warp_m * WM + (lane & 15), a_khalf = lane >> 4;
    const int b_row = warp_n * WN + (lane & 7) + ((lane >> 4) << 3), b_khalf = (lane >> 3) & 1;
    // Both row bases are multiples of 16 apart from the lane part, so each thread's swizzle XOR is
    // the same for all of its fragments: byte offsets per k16 sub-step, plus constant row strides.
    uint32_t a_off[KSTEPS], b_off[KSTEPS];
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
        a_off[ks] = swizzle(a_row, ks * 2 + a_khalf) * 2;
        b_off[ks] = swizzle(b_row, ks * 2 + b_khalf) * 2;
    }

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    uint32_t frag_a[2][MI][4];  // register double buffer: [sub-step parity][m tile][a0..a3]
    uint32_t frag_b[2][NI][2];  //                          [sub-step parity][n tile][b0, b1]

    // smem -> registers for k16 sub-step `ks` of pipeline stage `stage`.
    auto load_frags = [&](int buf, int stage, int ks) {
        const uint32_t a_base = sA + stage * (A_STAGE * 2) + a_off[ks];
        const uint32_t b_base = sB + stage * (B_STAGE * 2) + b_off[ks];
#pragma unroll
        for (int i = 0; i < MI; ++i) ldmatrix_x4(frag_a[buf][i], a_base + i * 16 * BK * 2);
#pragma unroll
        for (int j = 0; j < NI / 2; ++j) {
            uint32_t r[4];
            ldmatrix_x4(r, b_base + j * 16 * BK * 2);
            frag_b[buf][2 * j][0] = r[0];
            frag_b[buf][2 * j][1] = r[1];
            frag_b[buf][2 * j + 1][0] = r[2];
            frag_b[buf][2 * j + 1][1] = r[3];
        }
    };
    // This thread's cp.async sources for K tile 0 (rows m0 + ld_row + i * ROW_STEP of A, likewise B).
    const int ld_row = tid / CPR, ld_ch = tid % CPR;
    const __half* a_src = A + size_t(m0 + ld_row) * kK + ld_ch * 8;
    const __half* b_src = B + size_t(n0 + ld_row) * kK + ld_ch * 8;
    auto load_stage = [&](int stage, int kt) {
        const int k = kt * BK;
        load_tile<BM, kM>(sA + stage * A_STAGE * 2, a_src + k, A, ld_row, ld_ch, m0 + ld_row, k + ld_ch * 8);
        load_tile<BN, kN>(sB + stage * B_STAGE * 2, b_src + k, B, ld_row, ld_ch, n0 + ld_row, k + ld_ch * 8);
    };

    // Pipeline prologue: tiles 0..STAGES-2 in flight, one commit group each (empty past the end,
    // so the group count, and with it wait_group's meaning, never depends on nkt).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < nkt) load_stage(s, kt_begin + s);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();  // tile 0 has landed (for this thread) ...
    __syncthreads();              // ... and for every thread

    int read_stage = 0, write_stage = STAGES - 1;
    load_frags(0, read_stage, 0);

    for (int t = 0; t < nkt; ++t) {
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            if (ks == KSTEPS - 1) {
                // The next tile must be resident before its first fragments are read. The barrier
                // also proves every warp has finished reading the stage refilled next iteration.
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
            }
            // Double-buffering: fetch sub-step ks+1 (or the next tile's sub-step 0) now, use it
            // after this sub-step's MMAs.
            load_frags((ks + 1) & 1, read_stage, (ks + 1) % KSTEPS);
            if (ks == 0) {
                // Refill the stage consumed in the previous iteration with tile t + STAGES - 1.
                if (t + STAGES - 1 < nkt) load_stage(write_stage, kt_begin + t + STAGES - 1);
                cp_async_commit();
                write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int jj = 0; jj < NI; ++jj) {
                    const int j = (i & 1) ? NI - 1 - jj : jj;  // serpentine: reuse the last B fragment
                    mma_16816(acc[i][j], frag_a[ks & 1][i], frag_b[ks & 1][j]);
                }
        }
    }
    cp_async_wait<0>();  // only empty groups can remain, but drain before smem is reused
    __syncthreads();     // every warp is done with its last ldmatrix

    // Accumulator layout of m16n8: c0,c1 at (row g, cols 2q, 2q+1), c2,c3 at (row g+8, same cols).
    const int g = lane >> 2, q = lane & 3;
    // ---- vectorized epilogue through shared memory ----
    // fp32 -> fp16 once; half2 writes into a [BM][BN+8] staging tile (the 16-byte row padding
    // spreads the 8 rows of a write phase over all 32 banks).
    __half* sC = reinterpret_cast<__half*>(smem);
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) {
            const int r = warp_m * WM + i * 16 + g, c = warp_n * WN + j * 8 + 2 * q;
            *reinterpret_cast<__half2*>(&sC[r * LDC + c]) = __floats2half2_rn(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<__half2*>(&sC[(r + 8) * LDC + c]) = __floats2half2_rn(acc[i][j][2], acc[i][j][3]);
        }
    __syncthreads();
    // Then whole rows leave as 16-byte chunks: consecutive threads write consecutive chunks of a
    // row (coalesced). A chunk needs N % 8 == 0 (16-byte aligned rows) and to lie inside N.
    constexpr int C_CPR = BN / 8, C_CHUNKS = BM * C_CPR, C_ITERS = (C_CHUNKS + THREADS - 1) / THREADS;
#pragma unroll
    for (int it = 0; it < C_ITERS; ++it) {
        const int c = tid + it * THREADS;
        if (C_CHUNKS % THREADS != 0 && c >= C_CHUNKS) break;
        const int r = c / C_CPR, ch = c % C_CPR;
        const int gm = m0 + r, gn = n0 + ch * 8;
        if (kM % BM != 0 && gm >= kM) continue;
        const __half* s = &sC[r * LDC + ch * 8];
        __half* d = C + size_t(gm) * kN + gn;
        if (kN % 8 == 0 && (kN % BN == 0 || gn < kN)) {
            *reinterpret_cast<uint4*>(d) = *reinterpret_cast<const uint4*>(s);
        } else if (kN % 8 != 0) {
#pragma unroll
            for (int e = 0; e < 8; ++e)
                if (gn + e < kN) d[e] = s[e];  // masked scalar tail
        }
    }
}
