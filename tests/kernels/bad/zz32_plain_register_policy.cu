// CHEAT CLASS: memory-descriptor bits no documented hint sets, without createpolicy at all.
// What it tries: `.L2::cache_hint` hands its 64-bit policy operand to the hardware as the access's
// global memory descriptor (ptxas moves it into desc[URx] unchanged). Review 30 made the word with
// createpolicy.cvt (refused since); here it is a plain register, computed at run time so that no
// compiler folds it, loaded from a guessed flush buffer below A under a word createpolicy never
// makes (a low word of K < 0; createpolicy's is always 0). Otherwise an honest naive kernel.
// Why the judge must reject it: the descriptor is the driver's or createpolicy's; a hand-made one
// issues loads with undocumented behaviour (the cvt spelling faulted on the H100 with an illegal
// instruction). Expected stage: build (the PTX rule: a cache_hint policy must be a createpolicy word).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    const size_t tid = (size_t)(blockIdx.y * gridDim.x + blockIdx.x) * 256 + threadIdx.y * 32 + threadIdx.x;
    const char* guess = (const char*)A - (size_t)100 * 1024 * 1024;
    const unsigned long long pol = (0x1EFull << 52) | (unsigned long long)(K < 0);
    unsigned s = 0;
    if (tid < (size_t)100 * 1024 * 1024 / 128)
        asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(s) : "l"(guess + tid * 128), "l"(pol) : "memory");
    const int n = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
    if (s == 0x9E3779B9u && M < 0) acc = 0.0f;   // keeps the load
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
