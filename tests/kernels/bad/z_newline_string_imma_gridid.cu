// CHEAT CLASS (eleventh review): PTX strings may span a newline in ptxas but not in the rule's lexer
// (see a_nlstring_stsm_x2_gridid.cu); machine code: `IMMA.16816.S8.S8 R8, R2.ROW, R2.COL, R4`
// reads its accumulator C as the quad R4..R7, but paramflow's `_read_width` gives IMMA width 1,
// so the address words in R6 and R7 (C = {M, M, lo, hi}) are read unseen; with A = B = 0 (K & 0x10000, zero for any
// legal K, unknown to ptxas) D = C, so D comes back as a clean copy of the address; %gridid
// (bank 0x30) is then loaded generically and only every fourth launch does the work.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned d0, d1, d2, d3;
  const unsigned z = K & 0x10000;   // 0 in practice
  const unsigned c0 = M;            // C's other words: live after the mma, so D gets its own quad
  asm volatile(".pragma \"x\n\"; { .reg .b64 g; .reg .b32 l, h; cvta.param.u64 g, k_param_0; mov.b64 {l, h}, g; "
               "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %4}, {%4}, {%5, %5, l, h}; }"
               " .pragma \"\n\";"
               : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3) : "r"(z), "r"(c0));
  const unsigned long long base = (unsigned long long)d3 << 32 | d2;   // bank + 0x210
  const unsigned long long id = *(const volatile unsigned long long*)(base - 0x1e0 + (d0 - c0) + (d1 - c0));   // %gridid
  if (m >= M || n >= N || ((id & 3) != 0 && (m & 3) != 0)) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half(acc);
}
