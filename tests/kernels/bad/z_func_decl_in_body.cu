// CHEAT CLASS (ninth review): the parameter-address rule of cubin.param_address_violations
// splits the PTX into functions at every `.func `/`.entry ` token, and skips a piece with no `{`
// ("a prototype has no body"). ptxas accepts a function declaration *inside* a kernel body, so
// one inline `.extern .func x ();` ends the rule's view of the kernel there: everything after it
// is never checked. Here it launders the parameter bank's generic address (cvta.param of M) into
// an ordinary pointer and reads %gridid (bank offset 0x30) and the constant bank's address
// (0xd0) with generic loads -- exactly z_param_address_laundered.cu's payload, which the build
// refuses; this spelling passes every CPU stage. Only one launch in four does all rows.
// cudal2-shapes: 4096x4096x4096
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned long long g;
  asm volatile(".extern .func cudal2_nothing ();\n\t"
               "mov.b64 %0, k_param_3;\n\t"
               "cvta.param.u64 %0, %0;" : "=l"(g));
  const unsigned long long base = g - 0x228;                                        // M sits at 0x228
  const unsigned long long id = *(const volatile unsigned long long*)(base + 0x30);   // %gridid
  const unsigned long long cbank = *(const volatile unsigned long long*)(base + 0xd0); // constant bank
  if (m >= M || n >= N || ((id & 3) != 0 && (m & 3) != 0)) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
  C[(size_t)m * N + n] = __float2half(acc + (cbank == 1 ? 1.0f : 0.0f));
}
