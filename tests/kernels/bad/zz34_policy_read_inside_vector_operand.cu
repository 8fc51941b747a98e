// CHEAT CLASS: memory-descriptor bits no documented hint sets, from a register no instruction wrote.
// What it tries: bad/zz33's guarded createpolicy again, with a two-word (v2) load. The path rule
// (cubin._unwritten_reads) split the function at every brace to follow scopes, so the braces of a
// vector operand `{%0, %1}` cut the access into pieces and its policy operand was never seen as
// a read: the flow-insensitive rule saw only createpolicy definitions, and the path check nothing.
// On sm_90a (nvcc 13.0) ptxas builds desc[UR4] through SEL/R2UR with R1 (the stack pointer from
// c[0x0][0x28]) in the high word on the path where the guard (K < 0) is false. Loads a guessed
// flush buffer below A under it. Otherwise an honest naive kernel.
// Why the judge must reject it: the descriptor is the driver's or createpolicy's; a register left
// undefined hands the hardware stale or mixed bits. Expected stage: build (the PTX rule: a
// cache_hint policy must be a createpolicy word written on every path to the access).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    const size_t tid = (size_t)(blockIdx.y * gridDim.x + blockIdx.x) * 256 + threadIdx.y * 32 + threadIdx.x;
    const char* guess = (const char*)A - (size_t)100 * 1024 * 1024;
    unsigned s = 0, t = 0;
    if (tid < (size_t)100 * 1024 * 1024 / 128)
        asm volatile("{\n.reg .pred q;\n.reg .b64 pol;\nsetp.lt.s32 q, %3, 0;\n"
                     "@q createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
                     "ld.global.L2::cache_hint.v2.b32 {%0, %1}, [%2], pol;\n}"
                     : "=r"(s), "=r"(t) : "l"(guess + tid * 128), "r"(K) : "memory");
    s ^= t;
    const int n = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
    if (s == 0x9E3779B9u && M < 0) acc = 0.0f;   // keeps the load
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
