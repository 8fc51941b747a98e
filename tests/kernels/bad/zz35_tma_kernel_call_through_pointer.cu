// CHEAT CLASS: control flow the machine-code checks cannot see: a call through a function pointer
// in a kernel that names a __grid_constant__ TMA descriptor (so it loads the parameter bank's
// generic address, c[0x0][0x198]).
// What it tries: ptxas emits the call as `CALL.REL.NOINC R2 `(k)` (sm_90a, nvcc 13.0): nvdisasm
// prints the section's own label after the register. paramflow's graph and sassdesc's successor
// function both read that label as the target, i.e. a call to the kernel's entry, so the real
// callee (here the function that does the store) is never reached in either analysis: paramflow
// takes no fact into it, sassdesc skips its `desc[URx]` uses as "never reached". The build
// accepted it; both analyses vouch for code they never followed. paramflow's docstring promised
// to refuse a `CALL` to a register in a cubin that loads the address. Otherwise an honest naive
// kernel (the prefetch is a hint; the result is exact).
// Why the judge must reject it: the parameter-address and descriptor guarantees hold only over a
// complete control-flow graph; a callee reached only through a register is code no rule followed
// (whatever reaches it: a register still holding the address, a descriptor built elsewhere).
// Expected stage: build (a BRA/CALL naming a register is a computed target: refused, review 35).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K", {"tmap": "A", "box": [16, 16], "swizzle": 0}]}]}
*/
#include <cuda_fp16.h>
#include <cuda.h>
typedef void (*store_fn)(__half*, size_t, float);
__device__ __noinline__ void store(__half* C, size_t i, float v) { C[i] = __float2half_rn(v); }
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K,
                             const __grid_constant__ CUtensorMap tmA) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  if (threadIdx.x == 0 && threadIdx.y == 0)
    asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(&tmA)) : "memory");
  if (m >= M || n >= N) return;
  float acc = 0.0f;
  for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
  store_fn f = store;
  asm volatile("" : "+l"(f));   // keeps the call indirect
  f(C, (size_t)m * N + n, acc);
}
