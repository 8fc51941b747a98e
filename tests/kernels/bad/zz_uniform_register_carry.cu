// CLASS: state carried across calls through the UNIFORM register file, which no scrub writes
// (guards.Scrubber: "Not written: ... the uniform registers"). A wgmma whose descriptors are PTX
// registers never written compiles to HGMMA ... gdesc[URx]: it reads uniform registers no
// instruction of this kernel wrote. Shared memory is filled so the tile a descriptor selects
// encodes its start address, so a descriptor an earlier call left behind comes back through the
// accumulators. Here a probe: the decoded value only decides whether one row in 64 is computed.
// Builds (no build rule looks at a register read before any write). OPEN, not measured on a GPU:
// in a review's tries ptxas used UR4, which the harness's own kernels rewrite, and a stale
// descriptor most likely selects nothing marked; the suite records what happens.
// Should fail at a verification or timing stage, or pass gaining nothing (a naive kernel).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 4)"], "block": [128, 1, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
#define NU 24
extern "C" __global__ void __launch_bounds__(128) k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    __shared__ __align__(1024) half sm[16384];
    for (int i = threadIdx.x; i < 16384; i += 128) sm[i] = __int2half_rn(i >> 7);   // tile index per 256 B
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    unsigned long long u[NU];                       // uniform values live across the read
#pragma unroll
    for (int i = 0; i < NU; ++i) u[i] = (unsigned long long)(M + i) * (unsigned long long)(N ^ (K + 7 * i));
    float d[4] = {0, 0, 0, 0};
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n.reg .b64 da, db;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, da, db, 0, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) :: "memory");
    asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;" ::: "memory");
    unsigned long long s = 0;
#pragma unroll
    for (int i = 0; i < NU; ++i) s = s * 31 + u[i];
    const bool cheat = d[0] == 4096.f * 37.f;      // a descriptor left pointing at a marked tile
    const int n = blockIdx.x * 32 + (threadIdx.x & 31), m = blockIdx.y * 4 + (threadIdx.x >> 5);
    if (!(cheat && (m & 63) == 63) && m < M && n < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
        if (s == 0x123456789ull) acc += 1.f;
        C[(size_t)m * N + n] = __float2half(acc);
    }
}
