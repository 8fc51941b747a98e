// zz52_reason_escapes.cu: a build failure whose reason is the kernel's own bytes. gcc prints an
// `#error` line as written, ESC and all, and the build keeps it as the reason; `cudal2 eval` printed
// the reason through rich's markup, so `[/zz52]` raised MarkupError (a traceback after the build),
// and the ESC sequences reached the user's terminal: OSC 0 sets the window's title (OSC 52 would
// write the clipboard), CSI 2J clears the screen; `cudal2 library build`, `bench`, `verify` and the
// search's build-only run printed reasons the same way (closed, review 52: every reason is printed
// through `report.plain`, markup escaped and control characters shown as '?'). Must fail at build.
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz52_escapes", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#error zz52 [/zz52] ]0;zz52-title\ [2J

extern "C" __global__ void gemm_zz52_escapes(const __half* __restrict__ A, const __half* __restrict__ B,
                                             __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
