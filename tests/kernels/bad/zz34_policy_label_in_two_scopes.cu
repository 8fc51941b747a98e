// CHEAT CLASS: memory-descriptor bits no documented hint sets, from a register no instruction wrote.
// What it tries: PTX labels are scoped by braces, so two blocks may each define `$Lpol`. The path
// rule kept one position per label name (the last), so the `bra` over the createpolicy seemed to
// go to the second block's label, after the access, and every path to the access seemed to pass
// the write. ptxas takes the branch to the label in its own block, skipping the createpolicy: on
// sm_90a (nvcc 13.0) the load goes out with desc[UR4] where UR4:UR5 still hold A's address (from
// `ULDC.64 UR4, c[0x0][0x210]`) when K >= 0. Loads a guessed flush buffer below A under it.
// Otherwise an honest naive kernel.
// Why the judge must reject it: the descriptor is the driver's or createpolicy's. Expected stage:
// build (the PTX rule: a cache_hint policy must be a createpolicy word written on every path).
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
        asm volatile("{\n.reg .pred q;\n.reg .b64 pol;\nsetp.ge.s32 q, %2, 0;\n"
                     "{\n@q bra $Lpol;\ncreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n$Lpol:\n"
                     "ld.global.L2::cache_hint.b32 %0, [%1], pol;\n}\n"
                     "{\n$Lpol:\n}\n}"
                     : "=r"(s) : "l"(guess + tid * 128), "r"(K) : "memory");
    const int n = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
    if (s == 0x9E3779B9u && M < 0) acc = 0.0f;   // keeps the load
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
