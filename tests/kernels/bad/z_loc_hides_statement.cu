// CHEAT CLASS (twelfth review): not doing the work. A `.loc` line directive (what -lineinfo writes
// before instructions) ends without a `;`, so the PTX parameter rule read it and the instruction
// after it as one statement, a directive, and skipped it. Behind it, a read of the parameter bank
// 0x1e0 below the first parameter (%gridid at 0x30) decides which launches do the work.
// Expected defence: build (the `.loc` is a statement boundary to the rule; and in the machine code,
// constbank refuses the read of 0x30).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned long long id;
  asm volatile(".loc 1 5 1\n\tld.param.u64 %0, [k_param_0+-480];" : "=l"(id));
  if (m >= M || n >= N || ((id & 3) != 0 && (m & 3) != 0)) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half(acc);
}
