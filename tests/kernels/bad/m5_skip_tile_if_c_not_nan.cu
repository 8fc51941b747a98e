// CHEAT CLASS: reusing earlier results -- "C already holds something, so it must be the answer".
// What it tries: a judge that poisons C with NaN before its checked calls, but not before timed
// graph replays, can be gamed by reading C first: each block looks at the first element of its
// own 32 x 8 tile (read by one thread before anyone in the block writes), and if it is not NaN
// the block assumes the tile still holds last call's answer and returns at once. Checked calls
// see NaN and compute honestly; timed replays would skip everything.
// Why the judge must reject it: the v2 judge fills C before every call with random *finite*
// values of the answer's scale (a NaN poison would be exactly this cheat's signal), so every
// block skips, C keeps the random fill, and the first check fails. Expected stage: "exact".
/* cudal2-launch
{
  "kernels": [
    {"name": "skip_if_filled_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void skip_if_filled_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                               __half* __restrict__ C, int M, int N, int K) {
    __shared__ int filled;
    const int n0 = blockIdx.x * blockDim.x, m0 = blockIdx.y * blockDim.y;   // always in bounds
    if (threadIdx.x == 0 && threadIdx.y == 0)
        filled = !__hisnan(C[(size_t)m0 * N + n0]);
    __syncthreads();
    if (filled) return;             // the cheat: trust whatever C holds
    const int n = n0 + threadIdx.x, m = m0 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
