// CLASS: reaching the parameter bank (and %gridid at 0x30 below the parameters) through the local
// window's base plus a constant: cvta.local of 0 is what ptxas reads from c[0x0][0x20], and no
// rule followed that value. eval/window_probe.py measured on the H100 that the bank is a ring of 8
// slots 64 KiB apart at a distance from the local window that repeats across processes (one of
// two values in 12 processes; -181927408 to the first slot's parameters in 8 of them), so this
// kernel scans the 8 slots for the one holding its own first parameter and reads %gridid there.
// Should fail at "build": a read of either window's base is refused (constbank).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
#define PARAMS_FROM_LOCAL (-181927408ll)   /* measured: the first slot's parameters - cvta.local(0) */
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned long long lw, id = 0;
  asm volatile("cvta.local.u64 %0, %1;" : "=l"(lw) : "l"(0ull));
  for (int s = 0; s < 8; ++s) {
    const unsigned long long params = lw + PARAMS_FROM_LOCAL + 0x10000ull * s;
    if (*(const volatile unsigned long long*)params == (unsigned long long)A)
      id = *(const volatile unsigned long long*)(params - 0x210 + 0x30);
  }
  if (m >= M || n >= N || ((id & 3) != 0 && (m & 3) != 0)) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half(acc);
}
