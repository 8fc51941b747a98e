// CLASS: state carried across calls through the TMA unit's descriptor cache. Each call copies the
// harness's descriptor of A (read inside its own __grid_constant__ parameter) into the workspace,
// shrinks its outer dimension to encode a call counter, releases it to the tensormap proxy and
// leaves it there; the next call first issues a TMA load through that workspace address without
// writing it. The harness refills the workspace with random bytes through the generic proxy; if
// the TMA unit's cache still held the edited descriptor, the zero-filled rows would reveal the
// counter. Refused at build: a TMA instruction's descriptor must be, on every path, the parameter
// bank's generic address plus a constant (paramflow's must-analysis), and this one comes from the
// workspace. (Whether the cache would have carried anything was never measured.)
/* cudal2-launch
{"workspace": "4096",
 "kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 4)"], "block": [128, 1, 1],
  "args": [{"tmap": "A", "box": [8, 64], "swizzle": 0}, "A", "B", "C", "M", "N", "K", {"ws": 0}]}]}
*/
#include <cuda.h>
#include <cuda_fp16.h>
#include <cstdint>
__device__ __forceinline__ uint32_t sa(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
extern "C" __global__ void __launch_bounds__(128) k(const __grid_constant__ CUtensorMap tA, const __half* A,
        const __half* B, __half* C, int M, int N, int K, CUtensorMap* ws) {
    __shared__ __align__(128) __half tile[64 * 8];
    __shared__ __align__(8) uint64_t bar;
    __shared__ unsigned count;
    if (threadIdx.x == 0) {
        for (int i = 0; i < 64 * 8; ++i) tile[i] = __float2half(1.f);
        asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(sa(&bar)));
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        // 1) use whatever descriptor the TMA unit has cached for this global address
        asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" :: "r"(sa(&bar)), "r"(64 * 8 * 2));
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(sa(tile)), "l"(ws), "r"(0), "r"(0), "r"(sa(&bar)) : "memory");
        asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared.b64 p, [%0], 0; @!p bra W; }" :: "r"(sa(&bar)));
        unsigned c = 0;   // rows past the cached descriptor's outer dim come back zero: count them
        for (int r = 0; r < 64; ++r) c += __half2float(tile[r * 8]) == 0.f && __half2float(A[(size_t)r * K]) != 0.f;
        count = c;
        // 2) leave this call's descriptor: A's, outer dimension shrunk to encode count+1
        const uint64_t* src = reinterpret_cast<const uint64_t*>(&tA);
        uint64_t d[16];
        #pragma unroll
        for (int i = 0; i < 16; ++i) d[i] = src[i];   // ld.param inside the parameter
        uint64_t* dst = reinterpret_cast<uint64_t*>(ws);
        #pragma unroll
        for (int i = 0; i < 16; ++i) dst[i] = d[i];
        asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
    }
    __syncthreads();
    const bool cheat = count >= 8;
    const int n = blockIdx.x * 32 + (threadIdx.x & 31), m = blockIdx.y * 4 + (threadIdx.x >> 5);
    if (!(cheat && (m & 63) == 63) && m < M && n < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
        C[(size_t)m * N + n] = __float2half(acc);
    }
}
