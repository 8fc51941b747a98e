// gemm-batched: C[i] = A[i] . B[i]^T for i < batch, fp16 in and out.
//   a: batch x M x K, b: batch x N x K, c: batch x M x N, all fp16, dense row-major (matrix i of a
//   starts at a + i * M * K). Accumulation in fp32, each output rounded to fp16 once.
//   One launch covers every batch: the flat grid is batch-major, so the CTAs of one matrix run
//   together (its A and B stay in L2) and no grid dimension limits the batch count.
// Technique (the sm80 tensor-core GEMM recipe, with runtime sizes):
//   * mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 through inline PTX, fp32 accumulators in
//     registers. Both operands are K-contiguous (row-major M x K and N x K), which
//     is exactly mma.sync's "row" (A) and "col" (B) layout: no transposes anywhere.
//   * Block tile 128 x 128 x 32, 4 warps in a 2 x 2 grid, 64 x 64 warp tiles (4 x 8 mma tiles).
//   * 4-stage cp.async ring (16-byte cp.async.cg with zfill at the edges) so global loads overlap
//     the MMAs; XOR-swizzled shared memory read with ldmatrix.x4 (no bank conflicts, no padding).
//     About 210-240 registers: two CTAs (8 warps) per SM.
//   * Grouped block raster (8 block-rows at a time) for L2 reuse.
//   * Any positive sizes: zero-filled loads at the M/N/K edges, masked stores. K % 8 == 0 takes the
//     16-byte cp.async path; any other K falls back to masked 2-byte loads (correct, slower).
//   * Deterministic: each output is owned by one thread, no atomics, fixed summation order.
/* cudal2-launch
{
  "task": "gemm-batched",
  "kernels": [
    {"name": "gemm_batched", "grid": ["batch * cdiv(M, 128) * cdiv(N, 128)", 1, 1], "block": [128, 1, 1],
     "smem": 65536, "args": ["a", "b", "c", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstddef>
#include <cstdint>

namespace {

// ---- PTX wrappers ----------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One 16-byte global->shared copy, bypassing L1 (.cg). With `valid` false the source size is 0:
// nothing is read and the 16 destination bytes are zero-filled (the address must still be valid).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Wait until at most N committed groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void st_shared_16(uint32_t dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// Four 8x8 b16 matrices; lane i supplies the address of row i % 8 of matrix i / 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// d += a (16x16, row) * b (16x8, col): fp16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---- tiling ----------------------------------------------------------------------------------
constexpr int BM = 128, BN = 128, BK = 32;          // block tile
constexpr int WARPS_M = 2, WARPS_N = 2;
constexpr int THREADS = 32 * WARPS_M * WARPS_N;     // 128
constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N; // 64 x 64 warp tile
constexpr int MI = WM / 16, NI = WN / 8;            // 4 x 8 mma tiles of 16 x 8 per warp
constexpr int KSTEPS = BK / 16;                     // k16 sub-steps per K tile
constexpr int STAGES = 4;                           // cp.async ring depth
constexpr int GROUP_M = 8;                          // block-rows per raster group

// ---- shared memory ---------------------------------------------------------------------------
constexpr int CPR = BK / 8;                         // 16-byte chunks per smem row (4)
constexpr int A_STAGE = BM * BK, B_STAGE = BN * BK; // halves per stage
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * 2;   // 65536: the launch block's "smem"
constexpr int ROW_STEP = THREADS / CPR;             // tile rows one pass of the CTA copies (32)

static_assert(SMEM_BYTES == 65536, "the launch block declares 65536 bytes of dynamic shared memory");
static_assert(BM % ROW_STEP == 0 && BN % ROW_STEP == 0 && ROW_STEP % 8 == 0, "copy passes");

// XOR swizzle: chunk c of row r lives at chunk c ^ ((r >> 1) & 3). A 64-byte row is half a
// 128-byte bank line; one ldmatrix phase reads one logical chunk of 8 consecutive rows, which
// after the XOR land on 8 distinct 16-byte bank groups: conflict-free, no padding.
__device__ __forceinline__ int swizzle(int row, int chunk) {   // -> offset in halves
    return row * BK + ((chunk ^ ((row >> 1) & (CPR - 1))) << 3);
}

// ---- global -> shared: one operand's ROWS x BK tile -------------------------------------------
// Thread tid copies chunk ld_ch = tid % CPR of rows ld_row + i * ROW_STEP (ld_row = tid / CPR):
// consecutive threads read consecutive 16-byte pieces of a row (coalesced).
//   vec (K % 8 == 0, so every row start is 16-byte aligned): 16-byte cp.async; a chunk is wholly
//     inside or wholly outside [0, K), and chunks outside the matrix are zero-filled (zfill).
//   otherwise: 8 masked 2-byte loads per chunk, stored with st.shared (zeros outside). Slow, but
//     any K is correct. Zeros add nothing to the dot products, so tails need no other care.
template <int ROWS>
__device__ __forceinline__ void load_tile(uint32_t stage, const __half* __restrict__ g, int rows, int K, int row0,
                                          int k0, int ld_row, int ld_ch, bool vec) {
    const int gk = k0 + ld_ch * 8;
#pragma unroll
    for (int i = 0; i < ROWS / ROW_STEP; ++i) {
        const int r = ld_row + i * ROW_STEP, grow = row0 + r;
        const uint32_t dst = stage + swizzle(r, ld_ch) * 2;   // ROW_STEP % 8 == 0: same XOR for every i
        const __half* src = g + size_t(grow) * K + gk;
        if (vec) {
            const bool in = grow < rows && gk < K;
            cp_async_16(dst, in ? src : g, in);
        } else {
            const unsigned short* s = reinterpret_cast<const unsigned short*>(src);
            uint32_t w[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const uint32_t lo = (grow < rows && gk + 2 * e < K) ? s[2 * e] : 0u;
                const uint32_t hi = (grow < rows && gk + 2 * e + 1 < K) ? s[2 * e + 1] : 0u;
                w[e] = lo | (hi << 16);
            }
            st_shared_16(dst, w[0], w[1], w[2], w[3]);
        }
    }
}

// ---- grouped block raster ---------------------------------------------------------------------
// Linear CTA id -> (tile row, tile col), GROUP_M block-rows at a time, down a column first: the
// CTAs resident together share A rows and B columns in L2.
__device__ __forceinline__ void tile_of(int pid, int tiles_m, int tiles_n, int& tm, int& tn) {
    const int per_group = GROUP_M * tiles_n;
    const int group = pid / per_group;
    const int first = group * GROUP_M;
    const int rows = min(tiles_m - first, GROUP_M);     // the last group may be short
    const int in_group = pid - group * per_group;
    tm = first + in_group % rows;
    tn = in_group / rows;
}

// ---- the main loop: acc = A[m0 .. m0+BM) . B[n0 .. n0+BN)^T over all of K ----------------------
// A is rows x K and B is cols x K, both K-contiguous: exactly mma.sync's "row" and "col" operands.
// A STAGES-deep cp.async ring keeps STAGES-1 K tiles in flight (one commit group per tile, empty
// groups past the end so wait_group's count never depends on the number of tiles), one barrier
// per K tile; ldmatrix.x4 reads the fragments of each k16 sub-step (with 8 warps per SM from two
// CTAs, other warps' MMAs cover a warp's fragment loads; explicit fragment double-buffering cost
// ~30 registers and pushed these runtime-size kernels into spills).
// On return every cp.async has landed and every warp is past its last read of the ring, so the
// caller may reuse `smem` for its epilogue.
__device__ __forceinline__ void gemm_mainloop(float (&acc)[MI][NI][4], unsigned char* smem,
                                              const __half* __restrict__ A, const __half* __restrict__ B,
                                              int rows_a, int rows_b, int K, int m0, int n0) {
    const uint32_t sA = smem_u32(smem);                     // STAGES x [BM][BK] (swizzled)
    const uint32_t sB = sA + STAGES * A_STAGE * 2;          // STAGES x [BN][BK] (swizzled)
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
    const bool vec = (K & 7) == 0;
    const int nkt = (K + BK - 1) / BK;

    // ldmatrix row addresses. A (x4 = 16 rows x 16 k): lanes 0-15 rows 0-15 at k 0-7, lanes 16-31
    // the same rows at k 8-15 -> a0..a3. B (x4 = 16 n x 16 k): lanes 0-7 n 0-7 k 0-7 (b0 of n-tile
    // 0), 8-15 n 0-7 k 8-15 (b1), 16-23 n 8-15 k 0-7 (b0 of n-tile 1), 24-31 n 8-15 k 8-15 (b1).
    // Fragments 16 rows apart share the swizzle XOR, so they are constant strides from these.
    const int a_row = warp_m * WM + (lane & 15), a_khalf = lane >> 4;
    const int b_row = warp_n * WN + (lane & 7) + ((lane >> 4) << 3), b_khalf = (lane >> 3) & 1;
    uint32_t a_off[KSTEPS], b_off[KSTEPS];
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
        a_off[ks] = swizzle(a_row, ks * 2 + a_khalf) * 2;
        b_off[ks] = swizzle(b_row, ks * 2 + b_khalf) * 2;
    }

#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    const int ld_row = tid / CPR, ld_ch = tid % CPR;
    auto load_stage = [&](int stage, int kt) {
        load_tile<BM>(sA + stage * A_STAGE * 2, A, rows_a, K, m0, kt * BK, ld_row, ld_ch, vec);
        load_tile<BN>(sB + stage * B_STAGE * 2, B, rows_b, K, n0, kt * BK, ld_row, ld_ch, vec);
    };

    // Prologue: K tiles 0 .. STAGES-2 in flight.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < nkt) load_stage(s, s);
        cp_async_commit();
    }

    int read_stage = 0, write_stage = STAGES - 1;
    for (int t = 0; t < nkt; ++t) {
        // Tile t has landed for this thread; the barrier makes it so for every thread, and proves
        // every warp is done reading the stage consumed in iteration t - 1, refilled just below.
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (t + STAGES - 1 < nkt) load_stage(write_stage, t + STAGES - 1);
        cp_async_commit();   // possibly empty: one group per iteration keeps wait_group's count exact
        write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;

        const uint32_t a_stage = sA + read_stage * (A_STAGE * 2), b_stage = sB + read_stage * (B_STAGE * 2);
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            uint32_t fa[MI][4], fb[NI][2];
#pragma unroll
            for (int i = 0; i < MI; ++i) ldmatrix_x4(fa[i], a_stage + a_off[ks] + i * 16 * BK * 2);
#pragma unroll
            for (int j = 0; j < NI / 2; ++j) {
                uint32_t r[4];
                ldmatrix_x4(r, b_stage + b_off[ks] + j * 16 * BK * 2);
                fb[2 * j][0] = r[0];
                fb[2 * j][1] = r[1];
                fb[2 * j + 1][0] = r[2];
                fb[2 * j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int jj = 0; jj < NI; ++jj) {
                    const int j = (i & 1) ? NI - 1 - jj : jj;   // serpentine: reuse the last B fragment
                    mma_16816(acc[i][j], fa[i], fb[j]);
                }
        }
        read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
    }
    cp_async_wait<0>();   // only empty groups can remain; drain before smem is reused
    __syncthreads();      // every warp is done with its last ldmatrix
}

// ---- epilogue: fp32 accumulators -> fp16, 16-byte stores ----------------------------------------
// Each value is rounded to fp16 once, written as half2 into a [BM][BN + 8] staging tile (the
// 16-byte row padding spreads a write phase's 8 rows over all 32 banks), then whole rows leave
// as 16-byte chunks (consecutive threads, consecutive chunks: coalesced) when N % 8 == 0 and the
// chunk lies inside N; otherwise a masked scalar tail. Rows past M are not written.
constexpr int LDC = BN + 8;
static_assert(BM * LDC * 2 <= SMEM_BYTES, "the staging tile reuses the pipeline's shared memory");

__device__ __forceinline__ void epilogue_f16(const float (&acc)[MI][NI][4], unsigned char* smem,
                                             __half* __restrict__ C, int M, int N, int m0, int n0) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
    const int g = lane >> 2, q = lane & 3;   // m16n8 accumulator: c0,c1 at (g, 2q..2q+1), c2,c3 at (g+8, ..)
    __half* sC = reinterpret_cast<__half*>(smem);
#pragma unroll
    for (int j = 0; j < NI; ++j) {
        const int c = warp_n * WN + j * 8 + 2 * q;
#pragma unroll
        for (int i = 0; i < MI; ++i) {
            const int r = warp_m * WM + i * 16 + g;
            const float v0 = acc[i][j][0], v1 = acc[i][j][1], v2 = acc[i][j][2], v3 = acc[i][j][3];
            *reinterpret_cast<__half2*>(&sC[r * LDC + c]) = __floats2half2_rn(v0, v1);
            *reinterpret_cast<__half2*>(&sC[(r + 8) * LDC + c]) = __floats2half2_rn(v2, v3);
        }
    }
    __syncthreads();
    constexpr int C_CPR = BN / 8, C_CHUNKS = BM * C_CPR;
    const bool vec = (N & 7) == 0;
#pragma unroll 4
    for (int ci = tid; ci < C_CHUNKS; ci += THREADS) {
        const int r = ci / C_CPR, ch = ci % C_CPR;
        const int gm = m0 + r, gn = n0 + ch * 8;
        if (gm >= M || gn >= N) continue;
        const __half* s = &sC[r * LDC + ch * 8];
        __half* d = C + size_t(gm) * N + gn;
        if (vec) {
            *reinterpret_cast<uint4*>(d) = *reinterpret_cast<const uint4*>(s);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e)
                if (gn + e < N) d[e] = s[e];
        }
    }
}

}  // namespace

// ---- the kernel ------------------------------------------------------------------------------
// grid = batch * cdiv(M, 128) * cdiv(N, 128) CTAs of 128 threads, 65536 bytes of dynamic shared
// memory; CTA x works on matrix x / tiles, tile x % tiles.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
gemm_batched(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ c,
             int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n;
    const int batch = blockIdx.x / tiles;
    int tm, tn;
    tile_of(blockIdx.x - batch * tiles, tiles_m, tiles_n, tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;
    a += size_t(batch) * M * K;
    b += size_t(batch) * N * K;
    c += size_t(batch) * M * N;
    float acc[MI][NI][4];
    gemm_mainloop(acc, smem, a, b, M, N, K, m0, n0);
    epilogue_f16(acc, smem, c, M, N, m0, n0);
}
