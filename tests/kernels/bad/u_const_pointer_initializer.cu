// CHEAT CLASS: state across calls in constant memory, reached without cvta.const -- a __constant__
// pointer initialised with the address of another __constant__ array (nvcc writes `= generic(memo)`,
// ptxas a relocation in .rela.nv.constant*), loaded by an inline ld.const and written through as a
// plain generic pointer. r_const_memory_state.cu showed such stores persist on the H100; with a
// memo there, the batch-ahead attack of r_batch_ahead_local_state.cu comes back (call 0 of each
// replay computes every set, the others return). This file only shows the channel: it counts its
// calls there. From an adversarial review (2026-11-23), not run on a GPU.
// Closed at build: the PTX may hold no generic(...) initializer, the cubin no relocated constant section.
// cudal2-shapes: 256x256x256
/* cudal2-launch
{"kernels":[{"name":"k","grid":["cdiv(N, 32)","cdiv(M, 8)",1],"block":[32,8,1],"args":["A","B","C","M","N","K"]}]}
*/
#include <cuda_fp16.h>
__constant__ unsigned long long memo[4];
__constant__ unsigned long long* memo_ptr = (unsigned long long*)memo;
__device__ __forceinline__ unsigned long long* get_memo() { unsigned long long* p; asm volatile("ld.const.u64 %0, [memo_ptr];" : "=l"(p)); return p; }
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    volatile unsigned long long* w = get_memo();
    const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned long long prev = w[3];
    if (m == 0 && n == 0) { w[0] = (unsigned long long)A; w[3] = prev + 1; }
    if (m >= M || n >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)m*K+k]), __half2float(B[(size_t)n*K+k]), acc);
    C[(size_t)m*N+n] = __float2half_rn(acc + (prev > 1000000 ? 1.f : 0.f));
}
