// CLASS: reaching the parameter window (and %gridid at 0x30 below the parameters) through another
// window base: the shared window, cvta.shared of 0 plus a constant. ptxas forms it from the special
// register SR_SWINHI (S2UR), so no constant-bank word is read at all and neither the constant-bank
// rule nor paramflow (which follows only c[0x0][0x198]) sees anything; the generic load that follows
// is an ordinary LD. Sibling of tests/kernels/probe/window_offset_gridid.cu (local window, 0x20).
// Measured (eval/window_probe.py, H100): the distance from the shared window differs in every
// process (12 of 12), so this constant is a guess; its local-window sibling (bad/
// zz_local_window_gridid.cu) uses a distance that repeats. Both are refused at "build": a read of
// either window's base is (constbank), whatever constant follows it.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
#define PARAM_WIN_FROM_SHARED 0x1000000ull
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned long long sw;
  asm volatile("cvta.shared.u64 %0, %1;" : "=l"(sw) : "l"(0ull));
  unsigned long long id = *(const volatile unsigned long long*)(sw + PARAM_WIN_FROM_SHARED + 0x30);
  if (m >= M || n >= N || ((id & 3) != 0 && (m & 3) != 0)) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half(acc);
}
