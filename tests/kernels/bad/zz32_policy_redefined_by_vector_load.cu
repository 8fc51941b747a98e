// CHEAT CLASS: memory-descriptor bits no documented hint sets, laundered past a rule that reads
// only the first name of a vector destination.
// What it tries: one PTX register is written by createpolicy.fractional and, on another path, as
// the second name of a `ld.shared.v2.u64 {a, b}` destination whose value is a hand-made word (made
// from K at run time and stored to shared memory first, so the loaded word is 0x1EF..; the
// createpolicy path runs only if K < 0).
// A rule that saw only `a` as written would take `b` for a createpolicy word. The register is then
// the policy of a cache_hint load of a guessed flush buffer. Otherwise an honest naive kernel.
// Why the judge must reject it: as bad/zz32_plain_register_policy. Expected stage: build.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    __shared__ unsigned long long words[2];
    const size_t tid = (size_t)(blockIdx.y * gridDim.x + blockIdx.x) * 256 + threadIdx.y * 32 + threadIdx.x;
    const char* guess = (const char*)A - (size_t)100 * 1024 * 1024;
    if (threadIdx.x == 0 && threadIdx.y == 0) { words[0] = 0; words[1] = (0x1EFull << 52) | (unsigned long long)(K < 0); }
    __syncthreads();
    unsigned s = 0;
    if (tid < (size_t)100 * 1024 * 1024 / 128)
        asm volatile("{\n\t.reg .b64 a, p;\n\t.reg .pred q;\n\t"
                     "setp.ne.s32 q, %3, 0;\n\t"
                     "@q createpolicy.fractional.L2::evict_last.b64 p, 1.0;\n\t"
                     "@!q ld.shared.v2.u64 {a, p}, [%2];\n\t"
                     "ld.global.L2::cache_hint.b32 %0, [%1], p;\n\t}"
                     : "=r"(s) : "l"(guess + tid * 128), "r"((unsigned)__cvta_generic_to_shared(words)), "r"((int)(K < 0)) : "memory");
    const int n = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
    if (s == 0x9E3779B9u && M < 0) acc = 0.0f;   // keeps the load
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
