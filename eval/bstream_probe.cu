// bstream_probe: how fast can a persistent Hopper grid stream the weight matrix B [N][K] (fp16,
// K contiguous) into shared memory, by the ways a GEMM can load it? Loads only: a consumer warp
// releases each stage as soon as it lands, so the figure is the load path's ceiling, not a GEMM's.
//
// Why: at M = 128 every sm90raw tile shape and cuBLAS read B at the same 2.4-2.7 TB/s, while the
// stream family's bulk copies at M = 1 reach ~2.9 TB/s (eval/README.md). A TMA box of [BN rows][64 k]
// asks for BN separate 128-byte pieces, one per row of B; this probe tells whether asking for
// longer runs of each row (a 4-D box over KC consecutive k chunks, or plain 1-D bulk copies) moves
// the ceiling, before any GEMM is written around it.
//
// Modes (every CTA takes an equal contiguous run of the (tile, k step) iterations, stream-K style):
//   box2d   KC boxes [BN][64] per stage, one per 64-wide k chunk (what sm90raw does with KC = 1);
//   box4d   one box [BN/8][KC][8][64] per stage over a 4-D view of B, so each row's KC x 128
//           contiguous bytes are asked for together; the shared-memory image is KC swizzled
//           [8][64] atoms per 8-row group, which wgmma can read with a stride of KC x 1024 bytes;
//   bulk1d  BN row pieces of KC x 128 bytes per stage, plain cp.async.bulk (no swizzle);
//   flat    contiguous pieces of the same stage size (the upper bound: B read as one array).
// Also a device-to-device copy of B's bytes (cudaMemcpyAsync), the bandwidth reference.
//
// Guarantees: every CUDA and driver return code is checked; B holds random data, not zeros;
// each figure is the median of 15 event-timed calls after warm-up. Does not: verify data, or
// model wgmma's shared-memory reads.
#include "probe_util.cuh"
#include <cstring>


enum Mode { BOX2D = 0, BOX4D = 1, BULK1D = 2, FLAT = 3 };

struct Params {
    const __half* B;
    int N, K, BN, KC, STAGES, mode;
    long long iters;       // tiles x k steps
    int ksteps;            // k steps per tile (K / (64 KC))
    int stage_bytes;       // B's bytes per stage
    int with_a;            // also load the matching [128][64 KC] slice of A (128 x K, L2-resident) per stage
    int sched;             // 0: equal contiguous runs of (tile, k step) iterations; 1: whole tiles, CTA c takes c, c + grid, ...
    int hint;              // 1: A loaded with an L2 evict_last policy and B with evict_first (createpolicy)
};

__global__ void __launch_bounds__(64, 1) probe(const __grid_constant__ CUtensorMap map2d, const __grid_constant__ CUtensorMap map4d,
                                               const __grid_constant__ CUtensorMap mapa, Params p,
                                               unsigned* sink) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const int a_bytes = p.with_a ? 128 * 128 * p.KC : 0, stage_all = p.stage_bytes + a_bytes;
    const Ring ring = ring_init(smem_raw, p.STAGES, stage_all);
    unsigned char* smem = ring.base;
    uint64_t *full = ring.full, *empty = ring.empty;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // sched 1 walks whole tiles: iteration j of CTA c is tile c + (j / ksteps) * grid, k step j % ksteps
    const int tiles = int(p.iters / p.ksteps);
    const long long mine = (tiles - int(blockIdx.x) + int(gridDim.x) - 1) / int(gridDim.x);
    const long long i0 = p.sched ? 0 : p.iters * blockIdx.x / gridDim.x;
    const long long i1 = p.sched ? mine * p.ksteps : p.iters * (blockIdx.x + 1) / gridDim.x;
    uint64_t pol_a = 0, pol_b = 0;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol_a));
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol_b));
    if (warp == 0) {
        int s = 0;
        uint32_t ph = 0;
        for (long long i = i0; i < i1; ++i) {
            const int tile = p.sched ? int(blockIdx.x) + int(i / p.ksteps) * int(gridDim.x) : int(i / p.ksteps), ks = int(i % p.ksteps);
            mbar_wait(smem_u32(empty + s), ph ^ 1);
            const uint32_t dst = smem_u32(smem + s * stage_all), bar = smem_u32(full + s);
            if (lane == 0)
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(stage_all) : "memory");
            __syncwarp();
            if (a_bytes && lane < p.KC) {
                if (p.hint)
                    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;"
                                 :: "r"(dst + p.stage_bytes + lane * 128 * 128), "l"(&mapa), "r"((ks * p.KC + lane) * 64), "r"(0), "r"(bar), "l"(pol_a) : "memory");
                else
                    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                                 :: "r"(dst + p.stage_bytes + lane * 128 * 128), "l"(&mapa), "r"((ks * p.KC + lane) * 64), "r"(0), "r"(bar) : "memory");
            }
            if (p.mode == BOX2D && p.hint) {
                if (lane < p.KC)
                    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;"
                                 :: "r"(dst + lane * p.BN * 128), "l"(&map2d), "r"((ks * p.KC + lane) * 64), "r"(tile * p.BN), "r"(bar), "l"(pol_b) : "memory");
            } else if (p.mode == BOX2D) {
                if (lane < p.KC)
                    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                                 :: "r"(dst + lane * p.BN * 128), "l"(&map2d), "r"((ks * p.KC + lane) * 64), "r"(tile * p.BN), "r"(bar) : "memory");
            } else if (p.mode == BOX4D) {
                if (lane == 0)
                    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                                 :: "r"(dst), "l"(&map4d), "r"(0), "r"(0), "r"(ks * p.KC), "r"(tile * p.BN / 8), "r"(bar) : "memory");
            } else if (p.mode == BULK1D) {
                const int piece = p.KC * 128;
                for (int r = lane; r < p.BN; r += 32) {
                    const __half* src = p.B + size_t(tile * p.BN + r) * p.K + size_t(ks) * p.KC * 64;
                    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                                 :: "r"(dst + r * piece), "l"(src), "r"(piece), "r"(bar) : "memory");
                }
            } else {
                const int piece = p.stage_bytes / 32;
                const unsigned char* src = reinterpret_cast<const unsigned char*>(p.B) + size_t(i) * p.stage_bytes + lane * piece;
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                             :: "r"(dst + lane * piece), "l"(src), "r"(piece), "r"(bar) : "memory");
            }
            if (++s == p.STAGES) { s = 0; ph ^= 1; }
        }
    } else if (warp == 1) {
        int s = 0;
        uint32_t ph = 0, acc = 0;
        for (long long i = i0; i < i1; ++i) {
            acc += ring_consume(ring, s, ph, stage_all, lane);
            if (++s == p.STAGES) { s = 0; ph ^= 1; }
        }
        if (acc == 0x12345678u) sink[0] = acc;   // keeps the touch alive
    }
}

// The 4-D view: (k in chunk 64, row in group 8, chunk K/64, group N/8), strides in bytes
// (row K*2, chunk 128, group 8*K*2); needs K % 64 == 0 and N % 8 == 0.
static CUtensorMap make4d(const void* b, int N, int K, int BN, int KC) {
    CUtensorMap m;
    cuuint64_t dims[4] = {64, 8, cuuint64_t(K / 64), cuuint64_t(N / 8)};
    cuuint64_t strides[3] = {cuuint64_t(K) * 2, 128, cuuint64_t(K) * 16};
    cuuint32_t box[4] = {64, 8, cuuint32_t(KC), cuuint32_t(BN / 8)}, es[4] = {1, 1, 1, 1};
    CKD(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, const_cast<void*>(b), dims, strides, box, es,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return m;
}

int main(int argc, char** argv) {
    const int sms = 132;
    const int shapes[][2] = {{28672, 8192}, {14336, 4096}, {8192, 28672}, {4096, 14336}, {5120, 27648}, {128256, 4096}, {3584, 18944}, {18944, 3584}};
    const char* names[] = {"box2d", "box4d", "bulk1d", "flat"};
    struct Cfg { int mode, BN, KC, STAGES, with_a, sched, hint; };
    const Cfg cfgs[] = {{BOX2D, 256, 1, 6, 0, 0, 0}, {BOX2D, 256, 1, 4, 1, 0, 0}, {BOX2D, 256, 1, 4, 1, 0, 1},
                        {BOX2D, 128, 1, 6, 1, 0, 1}, {BOX2D, 256, 2, 2, 1, 0, 1},
                        {BOX2D, 256, 1, 4, 1, 1, 0}, {BOX2D, 224, 1, 4, 1, 1, 0}, {BOX2D, 224, 1, 4, 1, 1, 1},
                        {BOX2D, 128, 1, 6, 1, 1, 0}, {BOX2D, 112, 1, 6, 1, 1, 0}, {BOX2D, 64, 1, 8, 1, 1, 0},
                        {BOX2D, 224, 1, 4, 0, 1, 0}, {FLAT, 256, 1, 6, 0, 0, 0}};
    CKD(cuInit(0));
    unsigned* sink;
    CK(cudaMalloc(&sink, 16));
    CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
    printf("[\n");
    bool first = true;
    for (auto& sh : shapes) {
        const int N = sh[0], K = sh[1];
        const size_t elems = size_t(N) * K, bytes = elems * 2;
        __half *B, *C, *A;
        CK(cudaMalloc(&A, size_t(128) * K * 2));
        fill<<<256, 256>>>(A, size_t(128) * K, 777u);
        CK(cudaMalloc(&B, bytes));
        CK(cudaMalloc(&C, bytes));
        fill<<<1024, 256>>>(B, elems, 12345u);
        CK(cudaGetLastError());
        const double copy_us = median_us([&] { CK(cudaMemcpyAsync(C, B, bytes, cudaMemcpyDeviceToDevice)); });
        printf("%s{\"N\": %d, \"K\": %d, \"mode\": \"copy\", \"us\": %.2f, \"read_TBps\": %.3f, \"rw_TBps\": %.3f}", first ? "" : ",\n", N, K,
               copy_us, bytes / copy_us / 1e6, 2 * bytes / copy_us / 1e6);
        first = false;
        for (const Cfg& c : cfgs) {
            if ((c.mode >= BULK1D && N % c.BN) || K % (64 * c.KC)) continue;
            Params p{B, N, K, c.BN, c.KC, c.STAGES, c.mode, 0, K / (64 * c.KC), c.BN * c.KC * 128, c.with_a, c.sched, c.hint};
            const int tiles = (N + c.BN - 1) / c.BN;
            p.iters = (long long)tiles * p.ksteps;
            const int grid = c.sched ? std::min(tiles, sms) : sms;
            const CUtensorMap m2 = make2d(B, N, K, c.BN), m4 = make4d(B, N, K, c.BN, c.KC), ma = make2d(A, 128, K, 128);
            const int smem = c.STAGES * (p.stage_bytes + (c.with_a ? 128 * 128 * c.KC : 0)) + 2 * c.STAGES * 8 + 1024;
            const double us = median_us([&] {
                probe<<<grid, 64, smem>>>(m2, m4, ma, p, sink);
                CK(cudaGetLastError());
            });
            printf(",\n{\"N\": %d, \"K\": %d, \"mode\": \"%s\", \"BN\": %d, \"KC\": %d, \"stages\": %d, \"with_a\": %d, \"sched\": \"%s\", \"hint\": %d, \"grid\": %d, \"us\": %.2f, \"read_TBps\": %.3f, \"of_copy_rw\": %.3f}",
                   N, K, names[c.mode], c.BN, c.KC, c.STAGES, c.with_a, c.sched ? "tiles" : "stream", c.hint, grid, us, bytes / us / 1e6, (bytes / us) / (2 * bytes / copy_us));
        }
        CK(cudaDeviceSynchronize());
        CK(cudaFree(B));
        CK(cudaFree(C));
        CK(cudaFree(A));
    }
    printf("\n]\n");
    return 0;
}
