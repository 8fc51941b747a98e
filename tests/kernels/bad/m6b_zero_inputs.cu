// CHEAT CLASS: special-casing the test data -- zeroing the inputs outside the exact stage.
// What it tries: the exact stage's inputs are drawn from {-1, 0, 1}. A scan kernel looks at all
// of A; unless every entry is -1, 0 or 1, the GEMM kernel zeroes A and writes C = 0, which is the
// right answer for the A that is left behind -- a judge that recomputes its reference from the
// buffers after the call, or checks timed outputs against the current A, would accept it, and
// C = 0 costs a fraction of a GEMM. On {-1, 0, 1} data it computes honestly and passes "exact".
// The flag lives in the workspace and is cleared by the first kernel of every call.
// Why the judge must reject it: A and B are compared bitwise with untouched copies right after
// every call, before the output is compared. The first Gaussian call zeroes A.
// Expected stage: "inputs".
/* cudal2-launch
{
  "workspace": 16,
  "kernels": [
    {"name": "clear_flag", "grid": [1], "block": [1], "args": [{"ws": 0}]},
    {"name": "scan_a", "grid": ["min(cdiv(M * K, 256), 4096)"], "block": [256],
     "args": ["A", "M", "K", {"ws": 0}]},
    {"name": "gemm_or_zero", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void clear_flag(int* flag) { *flag = 0; }

extern "C" __global__ void scan_a(const __half* __restrict__ A, int M, int K, int* flag) {
    const size_t total = (size_t)M * K;
    bool ternary = true;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const float v = __half2float(A[i]);
        ternary &= v == -1.0f || v == 0.0f || v == 1.0f;
    }
    if (!ternary) *flag = 1;        // every writer writes the same value
}

extern "C" __global__ void gemm_or_zero(const __half* __restrict__ A, const __half* __restrict__ B,
                                        __half* __restrict__ C, int M, int N, int K, const int* flag) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (*flag) {
        // The cheat: not the exact stage's data, so make the answer trivial.
        __half* a = const_cast<__half*>(A);
        const size_t threads = (size_t)gridDim.x * blockDim.x * gridDim.y * blockDim.y;
        const size_t tid = ((size_t)blockIdx.y * blockDim.y + threadIdx.y) * gridDim.x * blockDim.x +
                           blockIdx.x * blockDim.x + threadIdx.x;
        for (size_t i = tid; i < (size_t)M * K; i += threads) a[i] = __float2half(0.0f);
        if (m < M && n < N) C[(size_t)m * N + n] = __float2half(0.0f);
        return;
    }
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
