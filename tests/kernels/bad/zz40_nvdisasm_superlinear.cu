// CLASS: crashing (and stalling) the reward service: a cubin too long for the machine-code rules'
// disassembler. `constbank.violations` (and through it `paramflow` and `sassdesc`) reads the cubin
// with one `nvdisasm -plr` run, outside the build's timeout, under a 60 s limit of its own; that
// run's time grows faster than the code (measured on this CPU with nvdisasm 13.2: 8,213
// instructions 2.3 s, 16,411 7.8 s, 32,789 30 s, this file's ~65,600 238 s). Past the limit
// subprocess.TimeoutExpired, which no rule caught, came out of build() and build_many(): one
// completion stopped the reward batch (every other reward with it) after a minute of stall.
// A few lines of macros make it: 64 unrolled loops of 512 dependent FMA pairs; nvcc and ptxas
// take ~7 s, well inside the build's timeout.
// Expected stage: build, within seconds of ptxas (a cubin of more instruction words than the
// machine-code rules read, `disasm.MAX_WORDS`, is refused before nvdisasm runs; a disassembler
// past its time is a refusal, never an exception).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
// cudal2-shapes: M=257 N=136 K=1032
#include <cuda_fp16.h>
#define R { _Pragma("unroll") for (int i = 0; i < 512; ++i) { x = fmaf(x, y, 1.1f + i); y = fmaf(y, x, 0.3f); } }
#define R4 R R R R
#define R16 R4 R4 R4 R4
#define R64 R16 R16 R16 R16

extern "C" __global__ void k(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
                             int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    float x = __half2float(A[n]), y = __half2float(B[n]);
    R64
    C[n] = __float2half_rn(x + y);
}
