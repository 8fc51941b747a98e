// CHEAT CLASS (tenth review): the PTX rule's string stripping (`"(?:[^"\\\n]|\\.)*"`) treats `\"` as an
// escape; ptxas does not (`.pragma "x\";` is the pragma `x\`). So `.pragma "x\"; CODE .pragma "y";`
// hides CODE from every PTX rule while ptxas assembles it. Machine code: paramflow's `_sources`
// sizes a bare source register by the opcode's `.64`/`.128`; `I2F.F64.U64 Rd, R4` reads the pair
// R4:R5 but only R4 is seen, so a tainted word placed in R5 (the high half) is converted unseen and
// comes back clean. With both halves laundered the kernel loads %gridid (bank+0x30) generically.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned long long id;
  unsigned l2, h2;
  // low word: the tainted word goes in the HIGH half of a pair whose low half is 0 (K & 1), is
  // converted to double and back (I2F.F64.U64 / F2I.U64.F64 read R4:R5 / R6:R7, paramflow sees R4 / R6)
  asm volatile(".pragma \"x\\\"; { .reg .b64 g, p, q; .reg .b32 lo, z, t; .reg .f64 d; "
               "cvta.param.u64 g, k_param_5; cvt.u32.u64 lo, g; and.b32 z, %1, 1; "
               "mov.b64 p, {z, lo}; cvt.rn.f64.u64 d, p; cvt.rzi.u64.f64 q, d; mov.b64 {t, %0}, q; } .pragma \"y\";"
               : "=r"(l2) : "r"(K));
  // high word (< 2^24 for any 49-bit virtual address): the same through f32 (I2F.U64)
  asm volatile(".pragma \"x\\\"; { .reg .b64 g, p; .reg .b32 hi, z, t; .reg .f32 f; "
               "cvta.param.u64 g, k_param_0; mov.b64 {t, hi}, g; and.b32 z, %1, 1; "
               "mov.b64 p, {z, hi}; cvt.rn.f32.u64 f, p; mul.f32 f, f, 0f2F800000; cvt.rzi.u32.f32 %0, f; } .pragma \"y\";"
               : "=r"(h2) : "r"(K));
  // k_param_5 (K) sits 0x20 past k_param_0 (at bank 0x210); %gridid is at bank 0x30 = k_param_0 - 0x1e0
  const unsigned long long base = (unsigned long long)h2 << 32 | (l2 - 0x20u);
  asm volatile("ld.volatile.u64 %0, [%1];" : "=l"(id) : "l"(base - 0x1e0));
  if (m >= M || n >= N || ((id & 3) != 0 && (m & 3) != 0)) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half(acc);
}
