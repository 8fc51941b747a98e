// CLASS: stalling the reward service: a build whose PTX rules never finish. The policy rule
// (`cubin._unwritten_reads`) searched the paths once per (cache_hint read, createpolicy write) pair,
// reads x writes x statements, and `_policies` / `_classes` recomputed every name once per link of a
// copy chain (quadratic); nothing bounds the rules' time (the build's timeout covers nvcc and ptxas,
// and the PTX rules run between them, in the reward service's own build thread). Here a few lines
// of macros expand to 8,192 createpolicy writes that a guarded `bra` jumps over and 8,192 loads
// after them: 256 of each took 9 s, 512 took 49 s, this file hours, and the whole GRPO batch (every
// other completion's reward) waited on it. (The kernel is refused in the end in any case: the
// loads read a policy register a path reaches unwritten.)
// Expected stage: build, within seconds (the path search is one per write under a step budget past
// which the function is refused; the fixpoints are worklists).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
#define W1 "createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
#define W4 W1 W1 W1 W1
#define W16 W4 W4 W4 W4
#define W64 W16 W16 W16 W16
#define W256 W64 W64 W64 W64
#define W1024 W256 W256 W256 W256
#define W8192 W1024 W1024 W1024 W1024 W1024 W1024 W1024 W1024
#define R1 "ld.global.L2::cache_hint.b32 t, [%1], pol;\n"
#define R4 R1 R1 R1 R1
#define R16 R4 R4 R4 R4
#define R64 R16 R16 R16 R16
#define R256 R64 R64 R64 R64
#define R1024 R256 R256 R256 R256
#define R8192 R1024 R1024 R1024 R1024 R1024 R1024 R1024 R1024
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    unsigned s = 0;
    asm volatile("{\n.reg .pred q;\n.reg .b64 pol;\n.reg .b32 t;\nsetp.lt.s32 q, %2, 0;\n@q bra END;\n"
                 W8192 "END:\n" R8192 "mov.b32 %0, t;\n}"
                 : "=r"(s) : "l"(A), "r"(K) : "memory");
    const int nn = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || nn >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)nn * K + kk]), acc);
    if (s == 0x9E3779B9u && M < 0) acc = 0.0f;
    C[(size_t)m * N + nn] = __float2half_rn(acc);
}
