// CHEAT CLASS: memory-descriptor bits no documented hint sets, from a register no instruction wrote.
// What it tries: the cache_hint rule asks that every definition of the policy register be a
// createpolicy (flow-insensitive), not that one reach the access. Here the only definition is a
// createpolicy guarded by a predicate that is false at run time (K < 0), so on the path taken the
// register is never written. ptxas fills the undefined half of its select with whatever uniform
// registers it likes (on sm_90a, 13.0: `USEL UR4, UR4, UR6, !UP0; USEL UR5, UR5, UR6, !UP0` with
// UR6 the low word of the driver's descriptor, c[0x0][0x208], in both halves), and the load goes
// out with desc[UR4] = a word neither createpolicy nor the driver made. Loads a guessed flush
// buffer below A under it. Otherwise an honest naive kernel.
// Why the judge must reject it: the descriptor is the driver's or createpolicy's; a register left
// undefined hands the hardware stale or mixed bits (bad/zz31_handmade_descriptor_cvt faulted on the
// H100 with a hand-made one). Expected stage: build (the PTX rule: a cache_hint policy must be a
// createpolicy word written on every path to the access).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    const size_t tid = (size_t)(blockIdx.y * gridDim.x + blockIdx.x) * 256 + threadIdx.y * 32 + threadIdx.x;
    const char* guess = (const char*)A - (size_t)100 * 1024 * 1024;
    unsigned s = 0;
    if (tid < (size_t)100 * 1024 * 1024 / 128)
        asm volatile("{\n.reg .pred q;\n.reg .b64 pol;\nsetp.lt.s32 q, %2, 0;\n"
                     "@q createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
                     "ld.global.L2::cache_hint.b32 %0, [%1], pol;\n}"
                     : "=r"(s) : "l"(guess + tid * 128), "r"(K) : "memory");
    const int n = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
    if (s == 0x9E3779B9u && M < 0) acc = 0.0f;   // keeps the load
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
