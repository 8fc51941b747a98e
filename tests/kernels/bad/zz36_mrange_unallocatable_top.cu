// CLASS: escaping the penalty: an M-range claim whose top end cannot be allocated. The claim
// `M=1-1000000000000 N=136 K=1032` covers the shape being judged (257x136x1032 here; a model is
// told its shape), and `ShapeClaim.verification_shapes` adds both ends of the range to the full
// verification. After the judged shape and M=1 pass, `Judge.verify` makes a Trial at
// M = 10^12: `buffers.Arena` asks for 2 TB and cupy raises OutOfMemoryError (a MemoryError, no
// `Failed`, no CUDA error), which leaves `judge.judge` uncaught: the worker answers with an error,
// the evaluator records a "harness error" with `checks["harness_traceback"]`, and
// `rl.reward.from_result` gives reward None (TRL: unscorable, advantage 0). So any kernel that
// is right at the judged shape and at M=1 never reaches timing: one whose timed calls cheat (and
// would fail the timing stage, reward = floor) is never penalized, and the rejudge never runs.
// The kernel here is the honest naive GEMM (bad only by its claim).
// Expected stage: "load" (a declared shape that does not fit is the claim's failure), with no
// harness_traceback.
// cudal2-shapes: M=1-1000000000000 N=136 K=1032
/* cudal2-launch
{"kernels": [{"name": "naive_gemm_claim", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
              "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>

extern "C" __global__ void naive_gemm_claim(const __half* __restrict__ A, const __half* __restrict__ B,
                                            __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
