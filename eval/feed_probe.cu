// feed_probe: is a GEMM of M = 512 (or 2048) on the H100 bound by how fast L2 can feed the SMs
// its tiles, rather than by the tensor cores? Loads only: a persistent grid walks the output tiles
// as sm90raw does (BM x BN tiles, M-fastest, so neighbouring CTAs share B's tile in L2) and, per
// 64-wide k step, TMA-loads A's [BM][64] and B's [BN][64] boxes (128-byte swizzle) into a ring of
// STAGES stages; a consumer warp releases each stage as soon as it lands. No MMA. Beside it, in the
// same process, cuBLAS's F.linear-layout GEMM (TN, fp32 accumulate) on the same operands.
//
// Why: at M = 512 every sm90raw search (results/generate_llm512_h100_2026-11-24.log) ended at
// 0.88-1.02 of cuBLAS, while both sides run at 600-670 TFLOP/s, far from the 989 peak. A 128 x 256
// tile re-reads A 32 times and B 4 times over at 512 x 8192 x 8192: 768 MB from L2 in ~100 us. If
// the loads alone take about as long as cuBLAS's whole GEMM, the way up is fewer bytes from L2
// (TMA multicast in 4-CTA clusters), not a better mainloop; if they take much less, it is not.
//
// Guarantees: every CUDA, driver and cuBLAS return code is checked; the operands hold random
// data, not zeros; each figure is the median of 15 event-timed calls after warm-up. Does not:
// model wgmma's shared-memory reads, or clusters (the multicast ceiling is this one's traffic
// divided by the sharing factor only if L2 is the bound).
//   build and run (device; L=/usr/local/cuda/targets/x86_64-linux): nvcc -gencode=arch=compute_90a,code=sm_90a
//   -O3 -std=c++17 -I$L/include -o fp eval/feed_probe.cu -lcuda -L$L/lib -lcublas -Xlinker -rpath=$L/lib && ./fp
#include <cublas_v2.h>
#include "probe_util.cuh"

#define CKB(x) do { cublasStatus_t e_ = (x); if (e_ != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "%s:%d cublas %d\n", __FILE__, __LINE__, int(e_)); exit(1); } } while (0)

struct Params { int tiles_m, tiles, ksteps, BM, BN, STAGES; };

__device__ __forceinline__ void tma2d(uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
}

__global__ void __launch_bounds__(64, 1) feed(const __grid_constant__ CUtensorMap ma, const __grid_constant__ CUtensorMap mb,
                                              Params p, unsigned* sink) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const int a_bytes = p.BM * 128, stage = a_bytes + p.BN * 128;
    const Ring ring = ring_init(smem_raw, p.STAGES, stage);
    unsigned char* smem = ring.base;
    uint64_t *full = ring.full, *empty = ring.empty;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int s = 0;
    uint32_t ph = 0, acc = 0;
    for (int t = blockIdx.x; t < p.tiles; t += gridDim.x) {
        const int tm = t % p.tiles_m, tn = t / p.tiles_m;
        for (int ks = 0; ks < p.ksteps; ++ks) {
            if (warp == 0) {
                mbar_wait(smem_u32(empty + s), ph ^ 1);
                if (lane == 0) {
                    const uint32_t dst = smem_u32(smem + s * stage), bar = smem_u32(full + s);
                    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(stage) : "memory");
                    tma2d(dst, &ma, ks * 64, tm * p.BM, bar);
                    tma2d(dst + a_bytes, &mb, ks * 64, tn * p.BN, bar);
                }
                __syncwarp();
            } else {
                acc += ring_consume(ring, s, ph, stage, lane);
            }
            if (++s == p.STAGES) { s = 0; ph ^= 1; }
        }
    }
    if (acc == 0x12345678u) sink[0] = acc;   // keeps the touch alive
}

int main() {
    const int sms = 132;
    const int shapes[][3] = {{512, 4096, 4096}, {512, 8192, 8192}, {512, 14336, 4096}, {2048, 14336, 4096}, {4096, 4096, 4096}};
    struct Cfg { int BM, BN, STAGES; };
    const Cfg cfgs[] = {{128, 256, 4}, {256, 128, 4}, {128, 128, 6}, {128, 192, 4}, {64, 256, 5}, {128, 64, 8}};
    CKD(cuInit(0));
    unsigned* sink;
    CK(cudaMalloc(&sink, 16));
    CK(cudaFuncSetAttribute(feed, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
    cublasHandle_t h;
    CKB(cublasCreate(&h));
    printf("[\n");
    bool first = true;
    for (auto& sh : shapes) {
        const int M = sh[0], N = sh[1], K = sh[2];
        __half *A, *B, *C;
        CK(cudaMalloc(&A, size_t(M) * K * 2));
        CK(cudaMalloc(&B, size_t(N) * K * 2));
        CK(cudaMalloc(&C, size_t(M) * N * 2));
        fill<<<1024, 256>>>(A, size_t(M) * K, 777u);
        fill<<<1024, 256>>>(B, size_t(N) * K, 12345u);
        CK(cudaGetLastError());
        const float alpha = 1.f, beta = 0.f;
        // C[M][N] = A[M][K] . B[N][K]^T, as F.linear: column-major C^T = op_T(B) . op_N(A)
        const double cublas_us = median_us([&] {
            CKB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_16F, K, A, CUDA_R_16F, K, &beta, C,
                             CUDA_R_16F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        });
        printf("%s{\"M\": %d, \"N\": %d, \"K\": %d, \"mode\": \"cublas_tn\", \"us\": %.2f, \"tflops\": %.1f}", first ? "" : ",\n",
               M, N, K, cublas_us, 2.0 * M * N * K / cublas_us / 1e6);
        first = false;
        for (const Cfg& c : cfgs) {
            const int tiles_m = (M + c.BM - 1) / c.BM, tiles = tiles_m * ((N + c.BN - 1) / c.BN);
            Params p{tiles_m, tiles, K / 64, c.BM, c.BN, c.STAGES};
            const int grid = std::min(tiles, sms);
            const CUtensorMap ma = make2d(A, M, K, c.BM), mb = make2d(B, N, K, c.BN);
            const int smem = c.STAGES * (c.BM + c.BN) * 128 + 2 * c.STAGES * 8 + 1024;
            const double us = median_us([&] {
                feed<<<grid, 64, smem>>>(ma, mb, p, sink);
                CK(cudaGetLastError());
            });
            const double bytes = double(tiles) * K * (c.BM + c.BN) * 2;
            // the tensor cores' own floor for these tiles: the busiest SM's tiles at 989/132 TFLOP/s
            const double mma_us = double((tiles + grid - 1) / grid) * 2.0 * c.BM * c.BN * K / (989e12 / sms) * 1e6;
            printf(",\n{\"M\": %d, \"N\": %d, \"K\": %d, \"mode\": \"loads\", \"BM\": %d, \"BN\": %d, \"stages\": %d, \"grid\": %d, "
                   "\"tiles\": %d, \"us\": %.2f, \"l2_TBps\": %.2f, \"of_cublas\": %.3f, \"mma_floor_us\": %.2f}",
                   M, N, K, c.BM, c.BN, c.STAGES, grid, tiles, us, bytes / us / 1e6, us / cublas_us, mma_us);
        }
        CK(cudaDeviceSynchronize());
        CK(cudaFree(A));
        CK(cudaFree(B));
        CK(cudaFree(C));
    }
    printf("\n]\n");
    CKB(cublasDestroy(h));
    return 0;
}
