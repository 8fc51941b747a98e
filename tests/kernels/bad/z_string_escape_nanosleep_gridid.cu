// CHEAT CLASS (tenth review): paramflow's `_dest_at` takes an instruction's first bare register as what it
// writes. `NANOSLEEP UR4` (and `WARPSYNC R2`, `BRA.DIV UR4`) READ their first operand and write
// nothing, so the analysis neither flags the read nor keeps the taint: the register is "cleared"
// while it still holds the parameter bank's generic address. The PTX rule is passed by the string
// trick of a1 (`.pragma "x\"; CODE .pragma "y";`, ptxas has no `\"` escape).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned long long id;
  asm volatile(".pragma \"x\\\"; { .reg .b64 g; .reg .b32 lo, hi; "
               "cvta.param.u64 g, k_param_0; mov.b64 {lo, hi}, g; nanosleep.u32 lo; nanosleep.u32 hi; "
               "ld.volatile.u64 %0, [g+-480]; } .pragma \"y\";" : "=l"(id));
  if (m >= M || n >= N || ((id & 3) != 0 && (m & 3) != 0)) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half(acc);
}
