// CHEAT CLASS: reusing earlier results -- a call counter kept in module memory past the end of the
// kernel's own __constant__ bank, whose generic base it reads from the parameter bank's driver word
// (c[0x0][0xd0] on sm_90a, nvcc 13.0) by an ld.param below its first parameter, hidden from a text
// rule by a `//` inside a block comment. From the sixth review (a helper; on the H100 a counter 4 KiB
// past a 32-byte bank went 0, 1, 2 over three calls while a comparison of the bank itself saw
// nothing). The counter only shows that state survives; a directory of timing sets (as in
// w_cbank_header_state.cu) would sit there the same way.
// Why it must gain nothing: the build refuses module __constant__ data (no bank, nothing to write),
// and the PTX rule refuses the read of the parameter bank outside a parameter. Expected: "build".
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
typedef unsigned long long u64;
__constant__ u64 table[4] = {1, 2, 3, 4};

extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  u64 leak = 0;
  asm volatile("/* // */ ld.param.u64 %0, [k_param_0+-320];\n\t/* */" : "=l"(leak));
  if (m == 0 && n == 0) { volatile u64* q = (volatile u64*)leak; q[512] = q[512] + 1; }   // a call counter kept across calls
  // use the word: write through it (the state channel), observable only where it is a pointer
  if (leak != 0 && m == 0 && n == 0 && K < 0) *(volatile u64*)leak = 1;
  if (m >= M || n >= N) return;
  float acc = (float)table[0] - 1.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half_rn(acc);
}
