// CHEAT CLASS: reusing earlier results -- the x_constant_past_end.cu state channel (a counter/directory
// kept past the module's constant-bank base, read from the driver word c[0x0][0xd0]) with the
// parameter-bank read hidden from cubin.param_address_violations by a NAME COLLISION.
// Mechanism: `_param_sizes` runs its .param regex over the raw PTX, comments included, so the comment
// `// .param .b8 zz[65536]` makes `zz` a 64 KiB "parameter". A nested PTX scope then declares a
// *register* called zz, sets it to -320 (a value from a register, not an immediate) and does
// `ld.param.u64 %0, [zz]`. The rule sees a load at offset 0 of a 64 KiB parameter; zz is not an
// .entry parameter name, and its only definition (mov from a register) just leaves it unclassified, so
// neither the use check nor the ld.param check fires. ptxas compiles it to LDC.64 R, c[0x0][R+0x210]
// with R = -0x140: an arbitrary, runtime-indexed read of the whole parameter bank (driver words
// included). The same works with no comment at all by shadowing the `param0`/`retval0` names nvcc
// declares in its own call sequences.
// Why it would pay: every c[0x0] driver word is the kernel's again (0xd0: the constant-bank base that
// the sixth review wrote past); if any of them leads to writable memory that outlives a call, state
// across calls (memo / batching directory) is back.
// Expected defence: build ("ptx: ... reaches the parameter bank outside a parameter"). ACTUAL: builds.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
typedef unsigned long long u64;
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  u64 leak = 0;
  asm volatile("// .param .b8 zz[65536]\n\t{ .reg .b64 zz; mov.b64 zz, %1; ld.param.u64 %0, [zz]; }" : "=l"(leak) : "l"((u64)(-320 + (M >> 30))));
  if (m == 0 && n == 0 && leak != 0) { volatile u64* q = (volatile u64*)leak; q[512] = q[512] + 1; }   // state past the bank base, as in x_constant_past_end.cu
  if (m >= M || n >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half_rn(acc);
}
