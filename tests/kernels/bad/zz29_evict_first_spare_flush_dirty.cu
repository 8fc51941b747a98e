// CLASS: skipping a cost every runner pays, by cache policy alone: timing.flush_l2 ends with
// buf.fill(0), so every timed call starts with the L2 full of the flush buffer's DIRTY lines and
// each line an honest call allocates evicts one of them (a DRAM write-back inside the timed
// call). Here every load and store carries an L2::evict_first policy from createpolicy (legal,
// documented PTX; cuBLAS/CUTLASS use such hints on streaming operands): once a few of its own
// evict_first lines exist, the L2 picks them as victims before the flush's evict_normal dirty
// lines, so the call pays few write-backs and leaves them to the next (untimed) flush. Also
// found in review 29: a hand-made policy word is not checked anywhere: ptxas passes the 64-bit
// cache_hint operand straight in as the global memory descriptor (LDG.E ... desc[URx] with URx
// from the operand, where honest code uses c[0x0][0x208]), so a candidate may issue loads and
// stores under any descriptor bits it likes.
// Builds. Should fail: nothing (it does all the work, correctly); the GPU question is whether its
// flushed time gains on the same kernel without hints by more than its honest reuse loss. OPEN.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
__device__ __forceinline__ unsigned short ldh(const __half* p, unsigned long long pol) {
    unsigned short v;
    asm volatile("ld.global.L2::cache_hint.b16 %0, [%1], %2;" : "=h"(v) : "l"(p), "l"(pol));
    return v;
}
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    const int n = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk)
        acc = fmaf(__half2float(__ushort_as_half(ldh(A + (size_t)m * K + kk, pol))),
                   __half2float(__ushort_as_half(ldh(B + (size_t)n * K + kk, pol))), acc);
    const unsigned short out = __half_as_ushort(__float2half_rn(acc));
    asm volatile("st.global.L2::cache_hint.b16 [%0], %1, %2;" :: "l"(C + (size_t)m * N + n), "h"(out), "l"(pol) : "memory");
}
