// CHEAT CLASS: reusing earlier results -- the x_constant_past_end.cu read of the driver word
// c[0x0][0xd0] (ld.param [k_param_0+-320]) hidden by a STRING that opens a comment for the checker only.
// Mechanism: param_address_violations strips comments with one regex, `/\*.*?\*/|//[^\n]*`, that knows
// nothing of PTX string literals. `.pragma "/*";` is a legal statement inside a function body
// (ptxas ignores unknown pragma strings), so to ptxas the `/*` is inside a string; to the checker it
// opens a block comment that a later `// */` (a line comment to ptxas) closes. Everything between --
// here the forbidden ld.param below the first parameter -- is invisible to the rule. SASS: LDC of
// c[0x0][0xd0].
// Why it would pay: as y1 -- the parameter-bank rule is the declared second layer behind the
// constant-data refusal; with it gone every driver word is readable.
// Expected defence: build (PTX parameter rule). ACTUAL: builds.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
typedef unsigned long long u64;
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  u64 leak = 0;
  asm volatile(".pragma \"/*\";\n\tld.param.u64 %0, [k_param_0+-320];\n\t// */" : "=l"(leak));
  if (m == 0 && n == 0 && leak != 0) { volatile u64* q = (volatile u64*)leak; q[512] = q[512] + 1; }   // state past the bank base, as in x_constant_past_end.cu
  if (m >= M || n >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half_rn(acc);
}
