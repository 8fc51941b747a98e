// CHEAT CLASS: skipping a cost every runner pays: last-use loads of the flush's dirty lines, spelled
// with the CUDA C++ intrinsic `__ldlu()` (no inline asm, no PTX text a rule could read: nvcc itself
// writes ld.global.lu). The 2x-L2 region just below A is guessed to hold a fresh flush buffer; if
// the L2 treats LU on a dirty line as a discard, those lines are dropped unwritten and this call's
// own allocations evict nothing that must be written back. Otherwise an honest naive kernel.
// From review 30. ptxas emits LDG.E.LU for it, as for the inline-asm spelling.
// Why the judge must reject it: what LU does to a dirty line is undocumented, so it is refused
// whatever the spelling. Expected stage: "build" (constbank's last-use rule on the SASS; the PTX
// rules have no .lu rule at all).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    const size_t tid = (size_t)(blockIdx.y * gridDim.x + blockIdx.x) * 256 + threadIdx.y * 32 + threadIdx.x;
    const unsigned* guess = (const unsigned*)((const char*)A - (size_t)100 * 1024 * 1024);
    unsigned s = 0;
    if (tid < (size_t)100 * 1024 * 1024 / 128) s = __ldlu(guess + tid * 32);   // one word per 128-byte line
    const int n = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
    if (s == 0x9E3779B9u && M < 0) acc = 0.0f;   // keeps the load
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
