// zz77_policy_scope_lookup_stall.cu (review 77): stalling the reward service at build, through the
// PTX cache_hint rule's name lookup. cubin._unwritten_reads resolved every policy read and
// createpolicy write to its `.reg` declaration by scanning the open scopes' declarations, newest
// first, with no budget (PATH_STEPS bounded only the path searches): with the policy register
// declared first and D names after it, each of R reads cost D steps. A few macro lines make
// D = 16^4 and R = 2^15 (1.15 MB of PTX): ~30 s of the build's Python, outside the compiler's
// timeout; D = 16^5, R = 2^17 (11 MB, under MAX_PTX_MB) ran past 11 minutes, and 32 MB would take
// hours a build. The asm sits under K < 0, so the kernel is an honest naive GEMM once built.
// Closed: a name is one dictionary lookup per open scope, and range declarations' comparisons count
// against PATH_STEPS (tests/test_review77.py: this file's rules in seconds). Expected: "done", at
// its honest (naive) speed.
// cudal2-shapes: 257x136x1032
/* cudal2-launch
{"kernels": [{"name": "stall_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 4)"], "block": [128, 1, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
#include <cstdint>

#define A1(p) p "a, " p "b, " p "c, " p "d, " p "e, " p "f, " p "g, " p "h, " p "i, " p "j, " p "k, " p "l, " p "m, " p "n, " p "o, " p "p, "
#define A2(p) A1(p "a") A1(p "b") A1(p "c") A1(p "d") A1(p "e") A1(p "f") A1(p "g") A1(p "h") A1(p "i") A1(p "j") A1(p "k") A1(p "l") A1(p "m") A1(p "n") A1(p "o") A1(p "p")
#define A3(p) A2(p "a") A2(p "b") A2(p "c") A2(p "d") A2(p "e") A2(p "f") A2(p "g") A2(p "h") A2(p "i") A2(p "j") A2(p "k") A2(p "l") A2(p "m") A2(p "n") A2(p "o") A2(p "p")
#define A4(p) A3(p "a") A3(p "b") A3(p "c") A3(p "d") A3(p "e") A3(p "f") A3(p "g") A3(p "h") A3(p "i") A3(p "j") A3(p "k") A3(p "l") A3(p "m") A3(p "n") A3(p "o") A3(p "p")
#define A5(p) A4(p "a") A4(p "b") A4(p "c") A4(p "d") A4(p "e") A4(p "f") A4(p "g") A4(p "h") A4(p "i") A4(p "j") A4(p "k") A4(p "l") A4(p "m") A4(p "n") A4(p "o") A4(p "p")
#define NAMES A4("x")
#define R1 "ld.global.L2::cache_hint.u32 r, [a], pol;\n"
#define R2 R1 R1
#define R3 R2 R2
#define R4 R3 R3
#define R5 R4 R4
#define R6 R5 R5
#define R7 R6 R6
#define R8 R7 R7
#define R9 R8 R8
#define R10 R9 R9
#define R11 R10 R10
#define R12 R11 R11
#define R13 R12 R12
#define R14 R13 R13
#define R15 R14 R14
#define R16 R15 R15
#define R17 R16 R16
#define READS R15

extern "C" __global__ void __launch_bounds__(128)
stall_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    if (K < 0)
        asm volatile("{\n.reg .b64 pol;\n.reg .b32 " NAMES "x;\n.reg .b64 a;\n.reg .b32 r;\n"
                     "mov.u64 a, %0;\n"
                     "createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
                     READS "}\n" :: "l"(A) : "memory");
    const int n = blockIdx.x * 32 + (threadIdx.x & 31), m = blockIdx.y * 4 + (threadIdx.x >> 5);
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half(acc);
}
