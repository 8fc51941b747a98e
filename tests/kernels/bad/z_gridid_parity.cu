// CHEAT CLASS: not doing the work -- a kernel that tells its launches apart by %gridid (a driver
// word below the parameters, c[0x0][0x30] on sm_90a: an identifier the driver gives each launch)
// and does the work only on launches it takes for checks. Here: every fourth launch does it all,
// the others a quarter of the rows, betting the judge checks fewer calls than it times. The PTX
// rules do not look at special registers; nothing in PTX spells a constant-bank read.
// Why it must gain nothing: the build reads the machine code and refuses any constant read outside
// the kernel's parameters and the words ptxas reads for the allowed special registers (%gridid is
// not one). Expected: "build" ("sass: ... reads %gridid at 0x30 ...").
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned long long id;
  asm volatile("mov.u64 %0, %%gridid;" : "=l"(id));
  if (m >= M || n >= N || ((id & 3) != 0 && (m & 3) != 0)) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half(acc);
}
