// CHEAT CLASS: skipping a cost every runner pays, by memory-descriptor bits no documented hint sets.
// What it tries: the last-use load (LDG.E.LU) and the discard (CCTL.E.RML2) are refused by
// constbank, and what either does to a dirty L2 line is undocumented. The 64-bit cache-policy
// operand of `.L2::cache_hint` is not checked anywhere: ptxas passes it straight in as the
// instruction's global memory descriptor (desc[URx], where honest code uses c[0x0][0x208]), and
// `createpolicy.cvt.L2.b64` passes any 64-bit value through unchanged (the SASS has no conversion:
// the register goes into desc[] as it is). createpolicy's own words carry an eviction code in bits
// 56..60 (0x10 unchanged, 0x12 first, 0x14 last, 0x16 normal, shifted by 52, the fraction below it);
// this kernel loads the 2x-L2 region below A (where a fresh flush buffer is guessed to sit) under a
// word {K < 0, 0x1ef00000}, which createpolicy never makes (its low word is always 0), fishing for an encoding that drops or
// demotes dirty lines the way LU might. Otherwise an honest naive kernel.
// Why the judge must reject it: the descriptor is the driver's; a candidate that sets its bits by
// hand issues loads and stores with undocumented behaviour that no rule, test or measurement covers
// (also noted in bad/zz29_evict_first_spare_flush_dirty). Expected stage: it builds; on a GPU it
// may fault (an invalid descriptor), or pass at its honest speed. From review 30; NOT run on a GPU.
// OPEN.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    const size_t tid = (size_t)(blockIdx.y * gridDim.x + blockIdx.x) * 256 + threadIdx.y * 32 + threadIdx.x;
    const char* guess = (const char*)A - (size_t)100 * 1024 * 1024;   // a guessed flush buffer
    unsigned long long word = (0x1EFull << 52) | (unsigned long long)(K < 0), pol;   // run-time: no folding
    asm volatile("createpolicy.cvt.L2.b64 %0, %1;" : "=l"(pol) : "l"(word));
    unsigned s = 0;
    if (tid < (size_t)100 * 1024 * 1024 / 128)
        asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(s) : "l"(guess + tid * 128), "l"(pol) : "memory");
    const int n = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
    if (s == 0x9E3779B9u && M < 0) acc = 0.0f;   // keeps the load
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
