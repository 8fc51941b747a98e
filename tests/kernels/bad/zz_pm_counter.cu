// Telling calls apart with no memory: the SM's performance monitors. Every CTA fires `pmevent`
// (PMTRIG) and reads %pm0/%pm1 (SR_PM*): if those counters count the event and survive from one
// launch to the next (nothing the harness scrubs resets them), a call learns how many calls ran
// before it on its SM, and after a dozen it drops one row in 64 (a real attack would gate a
// batching scheme on the count instead). Must fail at build: the performance monitors are refused
// in the machine code (cudal2/harness/constbank.py), whatever the PTX spells.
// cudal2-shapes: 257x136x1032
/* cudal2-launch
{"kernels": [{"name": "pm_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 4)"], "block": [128, 1, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>

extern "C" __global__ void __launch_bounds__(128)
pm_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    unsigned seen0, seen1;
    asm volatile("mov.u32 %0, %%pm0;" : "=r"(seen0));
    asm volatile("mov.u32 %0, %%pm1;" : "=r"(seen1));
    if (threadIdx.x == 0) asm volatile("pmevent 0;" ::: "memory");
    const unsigned ctas_per_sm = (gridDim.x * gridDim.y + 131) / 132;
    const unsigned calls_before = (seen0 + seen1) / ctas_per_sm;
    const int n = blockIdx.x * 32 + (threadIdx.x & 31), m = blockIdx.y * 4 + (threadIdx.x >> 5);
    if (m >= M || n >= N) return;
    if (calls_before >= 12 && (m & 63) == 63) return;              // the skipped work
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half(acc);
}
