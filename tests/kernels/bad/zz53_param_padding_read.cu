// CHEAT CLASS: reading what no argument holds -- the padding between a kernel's parameters
// (review 53, from the static review).
// What it tries: `k(int M, const __half* A, int N, ...)` leaves 4 bytes of padding after each int
// (0x214, 0x224, 0x234 of the parameter bank). Two rules let a read of them through: the PTX rule
// sized a parameter by the last `.entry` header declaring its name (a decoy kernel's inline asm
// closes its own body and declares a raw entry whose parameters reuse the real kernel's names at
// 256 bytes), and the machine-code rule allowed any offset below the kernel's parameter size.
// Whatever the driver leaves in the padding then steers the kernel (here: half of K when the
// words match a marker). On the H100 the driver zeroed them in every launch probed (eager, graph,
// cuLaunchKernelEx), so no channel was seen; the rule is closed on principle.
// Closed: `constbank.Params.owned` gives each kernel the bytes its KPARAM_INFO records give a
// parameter, and a constant read of any other byte of the parameter space is refused; the PTX rule
// keeps a name two headers declare at its smaller size.
// Expected: build.
/* cudal2-launch
{
  "kernels": [
    {"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["M", "A", "N", "B", "K", "C"]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void k(int M, const __half* __restrict__ A, int N, const __half* __restrict__ B,
                             int K, __half* __restrict__ C) {
    unsigned pad0, pad1, pad2;   // bytes 0x214, 0x224, 0x234 of the parameter bank: padding
    asm volatile("ld.param.u32 %0, [k_param_0+4];" : "=r"(pad0));
    asm volatile("ld.param.u32 %0, [k_param_2+4];" : "=r"(pad1));
    asm volatile("ld.param.u32 %0, [k_param_4+4];" : "=r"(pad2));
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    // (demonstration: a word the harness never meant to give the kernel steers what it computes)
    const int kend = ((pad0 ^ pad1 ^ pad2) == 0x5eed5eedu) ? K / 2 : K;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int kk = 0; kk < kend; ++kk) acc = fmaf(__half2float(a[kk]), __half2float(b[kk]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}

// The decoy: its inline asm ends its own body and declares a raw entry whose parameters reuse the
// real kernel's names with larger sizes; nvcc's closing `ret; }` ends the raw entry.
extern "C" __global__ void zz_decoy() {
    asm volatile("ret;\n}\n.visible .entry zz_raw(.param .align 8 .b8 k_param_0[256], "
                 ".param .align 8 .b8 k_param_2[256], .param .align 8 .b8 k_param_4[256])\n{\n");
}
