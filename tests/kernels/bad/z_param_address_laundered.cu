// CHEAT CLASS: not doing the work -- the parameter bank's generic address (cvta.param of a
// parameter, which the contract allows for TMA descriptors) laundered into an ordinary pointer by
// storing it into a call parameter of a __noinline__ identity function and reading the result
// back: the PTX rule checked a parameter-space store's address, not the value stored. Through the
// pointer, a generic load reads the driver's words below the parameters (here %gridid at bank
// offset 0x30, without a constant read the machine-code rule would see: the only one is the
// allowed 0x198), and only every fourth launch does all the work. From the eighth review (a
// helper; its variant also wrote through the constant bank's address at 0xd0).
// Why it must gain nothing: a parameter's address may appear in a parameter-space instruction
// only as its address operand. Expected: "build" ("ptx: ... moves a parameter's address through
// the parameter space").
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __device__ __noinline__ unsigned long long ident(unsigned long long x) { return x; }
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  if (K < 0) C[0] = __float2half((float)ident(K));   // a live call, so that nvcc emits .func ident
  unsigned long long g;
  asm volatile("{ .reg .b64 p, q; .param .b64 a0; .param .b64 r0;\n\t"
               "mov.b64 p, k_param_3;\n\t cvta.param.u64 q, p;\n\t"
               "st.param.b64 [a0+0], q;\n\t call.uni (r0), ident, (a0);\n\t"
               "ld.param.b64 %0, [r0+0]; }" : "=l"(g));
  const unsigned long long id = *(const volatile unsigned long long*)(g - 0x228 + 0x30);   // M sits at 0x228
  if (m >= M || n >= N || ((id & 3) != 0 && (m & 3) != 0)) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half(acc);
}
