// CHEAT CLASS: reusing earlier results -- state kept across calls in __constant__ memory.
// What it tries: v2 forbids writable module globals (.nv.global* sections), but a __constant__
// variable lives in .nv.constant*, and the hardware does not stop a store through a *generic*
// pointer to it. The kernel takes that generic pointer with inline PTX `cvta.const.u64` and keeps
// a memo there: the (A, B, C) pointers of the last call and a call counter. A call whose pointers
// equal the last call's, on an odd count, skips the K loop and leaves C as it is (it "already
// holds" the answer), so only every other call on the same buffers does the work.
// Why it would earn an undeserved score: the timed loop of a naive judge re-uses one set of
// buffers, so half the calls would cost next to nothing; state in constant memory also escapes a
// check that only looks for writable globals.
// Defence that must stop it: the cubin/PTX check in cudal2/harness/cubin.py rejects any
// `cvta.const` in the PTX (the one way to write __constant__ memory): stage "build". (Had it run,
// the fresh C before every call and the regenerated timing inputs would also catch the skip.)
/* cudal2-launch
{
  "kernels": [
    {"name": "const_state_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

// [0] A, [1] B, [2] C of the last call, [3] call counter. Read-only to C++; written through PTX.
__constant__ unsigned long long const_memo[4];

__device__ __forceinline__ unsigned long long* memo_generic() {
    unsigned long long* p;
    asm volatile("{\n\t.reg .u64 t;\n\tmov.u64 t, const_memo;\n\tcvta.const.u64 %0, t;\n\t}" : "=l"(p));
    return p;
}

extern "C" __global__ void const_state_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                            __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    // Every thread reads the memo (constant cache) before anyone writes it this call.
    const bool same = const_memo[0] == (uintptr_t)A && const_memo[1] == (uintptr_t)B && const_memo[2] == (uintptr_t)C;
    const bool skip = same && (const_memo[3] & 1ull);
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) {
        volatile unsigned long long* w = memo_generic();   // the cheat: a store into constant memory
        w[0] = (uintptr_t)A; w[1] = (uintptr_t)B; w[2] = (uintptr_t)C; w[3] = const_memo[3] + 1;
    }
    if (skip || m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
