// zz50_ptx_file_stat.cu: inline asm closes the device function and injects a module-level PTX
// `.file` directive naming a host file, with a `.loc` that uses it: ptxas stat()s the named file and
// writes its mtime and size into the cubin's .debug_line (an existence/metadata probe below the
// preprocessor, which no include rule sees).
extern "C" __global__ void zz50_probe(int* p) {
    p[0] = 1;
    asm volatile("ret;\n}\n.file 7 \"/etc/hostname\"\n.func zz50_tail()\n{\n.reg .b32 %r<100>;\n.reg .b64 %rd<100>;\n.loc 7 1 1\n");
}
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz50", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void gemm_zz50(const __half* __restrict__ A, const __half* __restrict__ B,
                                         __half* __restrict__ C, int M, int N, int K) {
    // n on the fast axis so that neighbouring threads write neighbouring C elements.
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;   // row m of A
    const __half* b = B + (size_t)n * K;   // row n of B (= column n of B^T)
    float acc = 0.0f;                      // fp32 accumulator, as the contract requires
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);   // the one rounding to fp16
}
