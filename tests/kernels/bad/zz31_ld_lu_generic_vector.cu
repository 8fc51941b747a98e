// CHEAT CLASS: skipping a cost every runner pays: last-use loads of the flush's dirty lines, spelled
// as a generic (no state space) 128-bit vector load with the qualifiers in another order,
// `ld.lu.v4.u32` through a pointer ptxas cannot place in a space, over the 2x-L2 region just below
// A where a fresh flush buffer is guessed to sit. Otherwise an honest naive kernel. From review 30.
// ptxas emits LD.E.LU.128 (generic LD, vector width after the hint), a form no earlier test kernel
// produced (zz29_stale_pointer_ld_lu: LDG.E.LU; the listing rows: LD.E.LU, LDG.E.LU.128).
// Why the judge must reject it: what LU does to a dirty line is undocumented, so it is refused
// whatever the spelling. Expected stage: "build" (constbank's last-use rule on the SASS).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
__device__ __noinline__ const char* away(const char* p, int k) { return k > 0 ? p - (size_t)100 * 1024 * 1024 : p; }
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    const size_t tid = (size_t)(blockIdx.y * gridDim.x + blockIdx.x) * 256 + threadIdx.y * 32 + threadIdx.x;
    const char* guess = away((const char*)A, K);   // generic: not provably global
    unsigned x = 0, y = 0, z = 0, w = 0;
    if (tid < (size_t)100 * 1024 * 1024 / 128)
        asm volatile("ld.lu.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "l"(guess + tid * 128) : "memory");
    const int n = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
    if ((x ^ y ^ z ^ w) == 0x9E3779B9u && M < 0) acc = 0.0f;   // keeps the load
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
