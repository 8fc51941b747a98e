// CLASS: skipping a cost every runner pays: the L2 discard spelled without `.global`
// (`discard.L2 [generic], 128`), over the 2x-L2 region just below A where a fresh flush buffer
// is guessed to sit, so the flush's dirty lines are dropped instead of written back while this
// call's loads evict them. From review 29. ptxas emits the same CCTL.E.RML2 as discard.global.L2.
// Should fail: "build" (constbank refuses CCTL*.RML2 whatever the PTX spelling).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    const size_t tid = (size_t)(blockIdx.y * gridDim.x + blockIdx.x) * 256 + threadIdx.y * 32 + threadIdx.x;
    const char* guess = (const char*)A - (size_t)100 * 1024 * 1024;   // a guessed flush buffer
    if (tid < (size_t)100 * 1024 * 1024 / 128)
        asm volatile("discard.L2 [%0], 128;" :: "l"(guess + tid * 128) : "memory");
    const int n = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
