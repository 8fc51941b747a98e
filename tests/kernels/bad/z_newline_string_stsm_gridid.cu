// CHEAT CLASS (eleventh review): (1) PTX layer: a newline inside a PTX string. ptxas's strings may
// span lines (`.pragma "x<NL>";` is the pragma `x<NL>`); the rule's lexer `"[^"\n]*"` does not
// let a string cross a newline, so it skips the first quote and pairs the second with the third:
// the code between them is a "string" to the rule and code to ptxas. (2) Machine code: paramflow's
// `_read_width` gives STSM.16.M88.2 (stmatrix .x2, which reads a register PAIR) width 1, so the
// second register of the pair is read unseen: the address words are stored to shared memory and
// read back clean, then %gridid (bank 0x30) is loaded generically.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  __shared__ __align__(16) unsigned buf[8][2][16];   // per warp: two 8x8 b16 matrices (128 B each)
  unsigned* mine = &buf[threadIdx.y][0][0];
  const unsigned lane = threadIdx.x;
  // lanes 0-7 give the rows of matrix 0, lanes 8-15 those of matrix 1 (16 B per row)
  const unsigned row = (unsigned)__cvta_generic_to_shared(mine) + (lane & 8 ? 128u : 0u) + (lane & 7) * 16u;
  const unsigned row2 = row + 256u * 0;   // same buffer, used twice (lo then hi)
  unsigned lo, hi;
  asm volatile(".pragma \"x\n\"; { .reg .b64 g; .reg .b32 l, h, z; cvta.param.u64 g, k_param_0; "
               "mov.b64 {l, h}, g; mov.u32 z, 0; "
               "stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {z, l}; } .pragma \"\n\";"
               :: "r"(row) : "memory");
  __syncwarp();
  lo = mine[32];                       // matrix 1, row 0, first word
  __syncwarp();
  asm volatile(".pragma \"x\n\"; { .reg .b64 g; .reg .b32 l, h, z; cvta.param.u64 g, k_param_0; "
               "mov.b64 {l, h}, g; mov.u32 z, 0; "
               "stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {z, h}; } .pragma \"\n\";"
               :: "r"(row2) : "memory");
  __syncwarp();
  hi = mine[32];
  const unsigned long long base = (unsigned long long)hi << 32 | lo;   // bank + 0x210
  const unsigned long long id = *(const volatile unsigned long long*)(base - 0x210 + 0x30);   // %gridid
  if (m >= M || n >= N || ((id & 3) != 0 && (m & 3) != 0)) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half(acc);
}
