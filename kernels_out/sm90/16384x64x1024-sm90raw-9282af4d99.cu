// ============================================================================================
// cudal2 kernel family "sm90raw": Hopper HGEMM in raw PTX (wgmma + TMA + mbarrier), sm_90a only.
// params: {"BM": 128, "BN": 64, "CLUSTER": 1, "CONSUMERS": 2, "EPI": "tma", "GROUP_M": 8, "KSPLIT": 1, "MAX_CTAS": 132, "ORDER": "grouped", "SCHED": "tiles", "SPLIT_K": 1, "STAGES": 4, "SWAP": 0}
// shape:  C[16384x64] = A[16384x1024] . B[64x1024]^T, all row-major fp16, fp32 accumulation
// cudal2-shapes: 16384x64x1024
//
// Block tile 128x64x64; 384 threads = 1 producer warpgroup + 2 consumer warpgroup(s),
// each consumer owning 64 rows x 64 columns (1 x wgmma m64n64k16 per k16 step, 32 fp32
// accumulators per thread); 4 pipeline stages of 24576 bytes; 128x1 = 128 output tiles
// walked by a persistent grid of 128 CTAs in GROUP_M=8 order; epilogue "tma";
// 115776 bytes of dynamic shared memory.
//
// Contract v2 (docs/kernel-contract.md): device code only. The harness encodes the TMA
// descriptors named in the launch block (2-D, fp16, out-of-bounds reads fill zeros), raises the
// dynamic shared-memory limit and launches sm90raw_hgemm on its stream.
//
// Techniques, and where each one lives:
//   * TMA loads (tma_load_2d): one thread issues cp.async.bulk.tensor.2d per operand and stage; the
//     Tensor Memory Accelerator copies a [rows][64 k] box straight into shared memory, with the
//     128-byte swizzle applied on the way in (16-byte chunk c of row r lands at chunk c ^ (r % 8)),
//     which is the layout wgmma reads without bank conflicts. Tails cost nothing: rows past M or N
//     and k past K are zero-filled by the TMA unit, and zeros add nothing to the dot products.
//   * mbarrier pipeline (full[] / empty[]): a ring of STAGES shared-memory stages. full[s] is armed
//     with the stage's byte count (arrive.expect_tx) and completes when the TMA unit has written
//     them all (complete_tx); empty[s] completes when every consumer warp has finished reading the
//     stage. Waits use try_wait.parity on the phase bit, which flips each time the ring wraps.
//   * warp specialization: warpgroup 0 is the producer (one thread issues every TMA), warpgroups
//     1..CONSUMERS are consumers that only wait, multiply and store.
//   * setmaxnreg: the producer needs few registers and gives them back (setmaxnreg.dec to
//     PRODUCER_REGS); the consumers take them (setmaxnreg.inc to CONSUMER_REGS) for accumulators.
//   * wgmma (wgmma_m64nNk16): wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16, both operands
//     read from shared memory through 64-bit matrix descriptors (smem_desc: start address, stride
//     1024 B between 8-row groups, 128B-swizzle mode). A (M x K, K contiguous) and B (N x K,
//     K contiguous) are both "K-major", so no transpose flag is set. The k16 steps inside a 64-wide
//     swizzled row are reached by advancing the descriptor's start address by 32 bytes.
//   * async MMA bookkeeping: wgmma.fence before the first wgmma that touches the accumulators,
//     commit_group per k tile, wait_group<1> so the tensor cores always have the next k tile's
//     MMAs queued while the previous tile's stage is released (one group in flight). The first
//     k16 step of each output tile uses scale-d = 0, which zeroes the accumulators for free.
//   * persistent grid + static tile scheduler (item_of): GRID <= #SMs CTAs; CTA b of
//     GRID handles work items b, b + GRID, ... (an item is one output tile). The
//     producer and the consumers walk the same sequence independently, so they need no scheduler
//     state in shared memory; the producer runs ahead into the next tile while the consumers are
//     still storing the current one (the ring carries over tiles).
//   * grouped raster: tiles are numbered in groups of GROUP_M tile-rows, column by column inside a
//     group, so the CTAs working at the same moment share A rows and B columns in L2.
//   * epilogue overlapped with the next tile's mainloop (stmatrix + TMA store): each consumer
//     rounds its accumulators to fp16 and writes them with stmatrix.x4 (four 8x8 fp16 matrices
//     per instruction, straight from the wgmma register layout) into its own staging area, in
//     column blocks of 64 halves with the 128-byte swizzle the C tensor map uses (conflict-free
//     writes); fence.proxy.async makes those generic-proxy writes visible to the TMA unit, and one
//     thread issues cp.async.bulk.tensor.2d stores (global <- shared) and commits them as a bulk
//     group. The consumer goes straight on to the next tile's wgmmas while the TMA unit drains the
//     staging area; it only waits (cp.async.bulk.wait_group.read 0) before overwriting it one tile
//     later. The TMA store clips rows past M and columns past N, so edges need no masking.
// ============================================================================================
/* cudal2-launch
{
  "m_tiles": [128],
  "kernels": [
    {"name": "sm90raw_hgemm", "grid": [128, 1, 1], "block": [384, 1, 1], "smem": 115776,
     "args": [{"tmap": "A", "box": [64, 128], "swizzle": 128},
              {"tmap": "B", "box": [64, 64], "swizzle": 128},
              {"tmap": "C", "box": [64, 64], "swizzle": 128}]}
  ]
}
*/
#include <cuda.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace {

// ---- the problem: this file is rendered for exactly one shape ------------------------------
constexpr int kM = 16384, kN = 64, kK = 1024;

// ---- tiling --------------------------------------------------------------------------------
constexpr int BM = 128, BN = 64, BK = 64;   // block tile; BK = 64 halves = one 128-byte swizzle row
constexpr int CONSUMERS = 2;                      // consumer warpgroups
constexpr int WG_M = BM / CONSUMERS;                   // rows of the tile per consumer warpgroup
constexpr int READERS = CONSUMERS;                     // consumer warpgroups reading one stage
constexpr int M_SUB = WG_M / 64;                       // wgmma m64 instructions per consumer per k16 step
constexpr int ACC = M_SUB * BN / 2;                    // fp32 accumulators per consumer thread
constexpr int THREADS = 128 * (1 + CONSUMERS);
constexpr int STAGES = 4;
constexpr int GROUP_M = 8;
constexpr int CLUSTER = 1;                          // CTAs per cluster (along M), sharing B by multicast

constexpr int TILES_M = (kM + BM - 1) / BM, TILES_N = (kN + BN - 1) / BN, TILES = TILES_M * TILES_N;
constexpr int KTILES = (kK + BK - 1) / BK;             // the last one may be partial (TMA zero-fills it)
// Work items: a cluster of CLUSTER CTAs takes CLUSTER vertically adjacent tiles at a time.
constexpr int ITEMS_M = (TILES_M + CLUSTER - 1) / CLUSTER, ITEMS = ITEMS_M * TILES_N;
constexpr int GRID = 128;                              // persistent CTAs: min(ITEMS * CLUSTER, MAX_CTAS)
constexpr int NCLUSTERS = GRID / CLUSTER;

// ---- registers: setmaxnreg moves them from the producer to the consumers ---------------------
// The CTA is compiled for THREADS threads at one block per SM, so each thread starts with
// 65536 / THREADS registers (rounded down to 8); the producer gives back what it does not need
// and the consumers take it: PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * CONSUMERS <= 65536.
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * CONSUMERS <= 65536, "register pool");

// ---- shared memory: STAGES x (A tile, B tile), the C staging areas, then the barriers ---------
constexpr int A_STAGE_BYTES = BM * BK * 2;             // [BM rows][128 bytes], 128B-swizzled by TMA
constexpr int B_STAGE_BYTES = BN * BK * 2;             // [BN rows][128 bytes]
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;   // what full[s] expects per stage
// C staging: per consumer, WG_M x BN halves as BN / EPI_COLS column blocks of [WG_M][EPI_COLS],
// each block one TMA-store box, stored with the EPI_COLS * 2-byte swizzle of the C tensor map.
constexpr int EPI_COLS = 64;
constexpr int EPI_ROW_BYTES = EPI_COLS * 2;
constexpr int EPI_BLOCK_BYTES = WG_M * EPI_ROW_BYTES;
constexpr int EPI_BYTES = CONSUMERS * WG_M * BN * 2;
static_assert(BN % EPI_COLS == 0 && EPI_COLS % 16 == 0 && EPI_BLOCK_BYTES % 1024 == 0, "staging blocks");
constexpr int BAR_BYTES = 2 * STAGES * 8;              // full[STAGES], empty[STAGES]
// +1024: the dynamic smem base is only guaranteed 16-byte aligned; the 128B swizzle pattern (and
// with it the wgmma descriptors) assumes every tile starts on a 1024-byte boundary.
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + EPI_BYTES + BAR_BYTES + 1024;

static_assert(BK == 64, "one 128-byte swizzle row per tile row: BK is 64 halves");
static_assert(WG_M * READERS == BM && (WG_M == 64 || WG_M == 128), "a consumer owns 64 or 128 rows");
static_assert(BN % 8 == 0 && BN >= 8 && BN <= 256, "wgmma m64nNk16: N is a multiple of 8 up to 256");
static_assert(BM <= 256 && BN <= 256, "a TMA box has at most 256 rows");
static_assert(A_STAGE_BYTES % 1024 == 0 && B_STAGE_BYTES % (1024 * CLUSTER) == 0, "tiles (and B halves) stay 1024-byte aligned");
static_assert(SMEM_BYTES == 115776 && ACC == 32, "the family's smem and register figures are the kernel's");
// The launch block above is rendered from the family's own numbers: they must be the kernel's.
static_assert(THREADS == 384 && TILES == 128 && GRID % CLUSTER == 0 && NCLUSTERS <= ITEMS,
              "launch block grid/block/cluster");

// ---- PTX wrappers ------------------------------------------------------------------------------
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

// Block until the phase with parity `parity` has completed. A fresh barrier is in phase 0, and
// the phase "before" it (parity 1) counts as complete, which is what lets the producer's first
// pass over the ring go through the empty[] barriers without waiting.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

// One box of `map` at (c0 along K, c1 along rows) into shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, { %2, %3 }], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

// ---- epilogue helpers: stmatrix into swizzled staging, then TMA store -------------------------
// Four 8x8 fp16 matrices from the accumulator fragments; lane l gives the row address of row
// l % 8 of matrix l / 8.
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], { %1, %2, %3, %4 };"
                 :: "r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
}

// The TMA swizzle of a staging block whose rows are EPI_ROW_BYTES (32, 64 or 128) long: the 16-byte
// chunk index (offset bits 4..) is XORed with offset bits 7.. over log2(EPI_ROW_BYTES / 16) bits
// (CuTe's Swizzle<1|2|3, 4, 3>), so 8 lanes writing the same column of 8 consecutive rows hit
// different banks. Valid because every block starts 1024-byte aligned.
__device__ __forceinline__ uint32_t epi_swizzle(uint32_t off) {
    constexpr uint32_t mask = EPI_ROW_BYTES / 16 - 1;
    return off ^ (((off >> 7) & mask) << 4);
}

__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, { %2, %3 }], [%1];"
                 :: "l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1) : "memory");
}

// Named barrier over one consumer warpgroup (id 0 is __syncthreads).
__device__ __forceinline__ void warpgroup_sync(int id) {
    asm volatile("bar.sync %0, 128;" :: "r"(id) : "memory");
}

// wgmma shared-memory matrix descriptor for a K-major tile written by TMA with the 128B swizzle:
//   bits  0-13  start address >> 4
//   bits 16-29  leading-dimension byte offset >> 4 (unused by the swizzled K-major layouts; 1)
//   bits 32-45  stride-dimension byte offset >> 4: 8 rows x 128 B = 1024 B between 8-row groups
//   bits 62-63  layout: 1 = 128-byte swizzle
// The base-offset field stays 0 because every tile starts 1024-byte aligned.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
    return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }

// Pin the accumulators around the asynchronous MMAs: an empty asm that "reads and writes" each one
// keeps the compiler from moving their uses across a wgmma issue or wait.
__device__ __forceinline__ void fence_acc(float (&d)[M_SUB][BN / 2]) {
#pragma unroll
    for (int s = 0; s < M_SUB; ++s)
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) asm volatile("" : "+f"(d[s][i]) :: "memory");
}

// D[64 x BN] (+)= A[64 x 16] . B[BN x 16]^T, fp16 in, fp32 accumulators in registers.
// scale_d = 0 ignores D's old contents (the first k16 step of a tile); 1 accumulates.
// Accumulator layout: warp w of the warpgroup holds rows 16w..16w+15; lane l holds, for every
// 8-column group j, d[4j+0..1] at row 16w + l/4, columns 8j + 2(l%4) + {0,1}, and d[4j+2..3]
// eight rows below.
__device__ __forceinline__ void wgmma_m64nNk16(float (&d)[BN / 2], uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "setp.ne.b32 p, %34, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 { "
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
                 " }, %32, %33, p, 1, 1, 0, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}


// ---- tile scheduler: linear work item -> (item row, tile col) in grouped order ----------------
// Items are visited in groups of GROUP_M item-rows; inside a group the walk goes down a column
// first, so the items in flight at once (consecutive indices) reuse A rows and B columns in L2.
// An item is one tile (CLUSTER = 1) or CLUSTER vertically adjacent tiles (one per CTA).
__device__ __forceinline__ void item_of(int t, int& im, int& tn) {
    constexpr int PER_GROUP = GROUP_M * TILES_N;
    const int group = t / PER_GROUP;
    const int first = group * GROUP_M;
    const int rows = ITEMS_M - first < GROUP_M ? ITEMS_M - first : GROUP_M;  // the last group may be short
    const int in_group = t - group * PER_GROUP;
    im = first + in_group % rows;
    tn = in_group / rows;
}

}  // namespace

// ---- the kernel -----------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(THREADS, 1)
sm90raw_hgemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
              const __grid_constant__ CUtensorMap tmC) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t sA = (smem_u32(smem_raw) + 1023u) & ~1023u;   // STAGES x [BM][64] halves
    const uint32_t sB = sA + STAGES * A_STAGE_BYTES;            // STAGES x [BN][64] halves
    const uint32_t sC = sB + STAGES * B_STAGE_BYTES;            // CONSUMERS x [WG_M][BN] halves
    const uint32_t full_bar = sC + EPI_BYTES;                   // STAGES x 8 bytes
    const uint32_t empty_bar = full_bar + STAGES * 8;           // STAGES x 8 bytes

    const int wg = threadIdx.x / 128;                           // 0: producer, 1..CONSUMERS: consumers
    const int first_item = blockIdx.x;
    constexpr int ITEM_STEP = GRID;

    if (threadIdx.x == 0) {
        asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(&tmA)) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(&tmB)) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(&tmC)) : "memory");
#pragma unroll 1
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full_bar + 8 * s, 1);                     // the producer's arrive.expect_tx
            mbar_init(empty_bar + 8 * s, CLUSTER * READERS * 4);   // one arrive per reading consumer warp
        }
        // Make the initialized barriers visible to the async proxy (the TMA unit).
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        // ================= producer warpgroup =================
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            int stage = 0;
            uint32_t phase = 0;
#pragma unroll 1
            for (int t = first_item; t < ITEMS; t += ITEM_STEP) {
                int im, tn;
                item_of(t, im, tn);
                const int tm = im;
#pragma unroll 1
                for (int kt = 0; kt < KTILES; ++kt) {
                    mbar_wait(empty_bar + 8 * stage, phase ^ 1);      // every consumer warp released it
                    const uint32_t fb = full_bar + 8 * stage;
                    mbar_arrive_expect_tx(fb, STAGE_BYTES);           // full boxes, zero-fill included
                    tma_load_2d(sA + stage * A_STAGE_BYTES, &tmA, kt * BK, tm * BM, fb);
                    tma_load_2d(sB + stage * B_STAGE_BYTES, &tmB, kt * BK, tn * BN, fb);
                    if (++stage == STAGES) { stage = 0; phase ^= 1; }
                }
            }
        }
    } else {
        // ================= consumer warpgroups =================
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(CONSUMER_REGS));
        const int c = wg - 1;                                   // which WG_M rows of the tile
        const int tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
        // Descriptors of stage 0, k16 step 0; the start-address field (the low bits) is then
        // advanced by (byte offset >> 4) for other stages, k16 steps and m64 sub-tiles.
        const uint64_t desc_a0 = smem_desc(sA + c * WG_M * 128);
        const uint64_t desc_b0 = smem_desc(sB);
        const uint32_t stage_c = sC + c * (WG_M * BN * 2);      // this consumer's C staging area

        float acc[M_SUB][BN / 2];
        int stage = 0;
        uint32_t phase = 0;
#pragma unroll 1
        for (int t = first_item; t < ITEMS; t += ITEM_STEP) {
            int im, tn;
            item_of(t, im, tn);
            const int tm = im;
            int prev = 0;
#pragma unroll 1
            for (int kt = 0; kt < KTILES; ++kt) {
                mbar_wait(full_bar + 8 * stage, phase);                 // TMA bytes have landed
                fence_acc(acc);
                wgmma_fence();
#pragma unroll
                for (int ks = 0; ks < BK / 16; ++ks) {
#pragma unroll
                    for (int s = 0; s < M_SUB; ++s) {
                        const uint64_t da = desc_a0 + ((stage * A_STAGE_BYTES + s * 64 * 128 + ks * 32) >> 4);
                        const uint64_t db = desc_b0 + ((stage * B_STAGE_BYTES + ks * 32) >> 4);
                        wgmma_m64nNk16(acc[s], da, db, (kt > 0 || ks > 0) ? 1 : 0);
                    }
                }
                wgmma_commit();
                fence_acc(acc);
                // Keep this k tile's MMAs in flight; the previous one's are done, so its stage
                // can go back to the producer.
                wgmma_wait<1>();
                fence_acc(acc);
                if (kt > 0 && lane == 0) mbar_arrive(empty_bar + 8 * prev);
                prev = stage;
                if (++stage == STAGES) { stage = 0; phase ^= 1; }
            }
            wgmma_wait<0>();
            fence_acc(acc);
            if (lane == 0) mbar_arrive(empty_bar + 8 * prev);

            // ---- epilogue: stmatrix into the staging area, then one thread issues TMA stores ----
            // The staging area may still be read by the TMA store of this consumer's previous tile.
            if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
            warpgroup_sync(1 + c);
            {
                // Lane l addresses row (l % 8) + 8 * ((l / 8) % 2) of the warp's 16-row slab and
                // column half (l / 16) of a 16-column group: matrices 0..3 = (rows 0-7, cols 0-7),
                // (rows 8-15, cols 0-7), (rows 0-7, cols 8-15), (rows 8-15, cols 8-15), which are
                // accumulator pairs d[8p + 0,1], d[8p + 2,3], d[8p + 4,5], d[8p + 6,7].
                const int row = warp * 16 + (lane % 8) + 8 * ((lane / 8) % 2);
                const int colh = 8 * (lane / 16);
#pragma unroll
                for (int s = 0; s < M_SUB; ++s)
#pragma unroll
                    for (int p = 0; p < BN / 16; ++p) {
                        const int col = 16 * p + colh;                   // column within the tile
                        const uint32_t block = stage_c + (col / EPI_COLS) * EPI_BLOCK_BYTES;
                        const uint32_t off = (s * 64 + row) * EPI_ROW_BYTES + (col % EPI_COLS) * 2;
                        stmatrix_x4(block + epi_swizzle(off),
                                    pack_half2(acc[s][8 * p + 0], acc[s][8 * p + 1]),
                                    pack_half2(acc[s][8 * p + 2], acc[s][8 * p + 3]),
                                    pack_half2(acc[s][8 * p + 4], acc[s][8 * p + 5]),
                                    pack_half2(acc[s][8 * p + 6], acc[s][8 * p + 7]));
                    }
            }
            // Generic-proxy writes -> visible to the async proxy (TMA), then all of them done.
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            warpgroup_sync(1 + c);
            if (tid == 0) {
                const int row0 = tm * BM + c * WG_M;
                if (kM % BM == 0 || row0 < kM) {
#pragma unroll
                    for (int b = 0; b < BN / EPI_COLS; ++b) {
                        const int col0 = tn * BN + b * EPI_COLS;
                        if (kN % BN == 0 || col0 < kN) tma_store_2d(&tmC, stage_c + b * EPI_BLOCK_BYTES, col0, row0);
                    }
                }
                asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            }
        }
        // The last stores must be complete (not just read out of shared memory) before exit.
        if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
