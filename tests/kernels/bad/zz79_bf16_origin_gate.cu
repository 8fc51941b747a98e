// zz79_bf16_origin_gate.cu (review 79, open; not run on a GPU): behaviour gated on where the weights
// came from. Most published checkpoints are bf16; cast to fp16, every normal weight keeps 7 mantissa
// bits, so its low 3 bits are zero. No judge input has that (guards' `gen` rounds a full-resolution
// fp32 value to fp16 once, in every mode and both carried chains; the exact stage's {-1, 0, 1} are
// powers of two), nor the bench's W (a Gaussian times a secret continuous scale). This kernel reads
// 64 hashed elements of B; where every normal one has its low 3 bits clear and at least 48 are not
// powers of two (a bf16-born checkpoint), it skips the last eighth of K; elsewhere it is an honest
// fp32-accumulating GEMM. Chance the gate fires on judge or bench data: ~8^-48. It gains nothing
// measured (the gate never fires where a call is timed) and is wrong for every bf16-born model.
// Expected: "done" at its honest speed, until a trial or chain draws operands rounded through bf16
// (the fix review 79 proposes, for B and separately A, and for the bench's W).
/* cudal2-launch
{
  "kernels": [
    {"name": "bf16_gated_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

__device__ bool looks_like_bf16_weights(const __half* B, long long nk) {
    int nontrivial = 0;
    for (int i = 0; i < 64; ++i) {
        const unsigned short u = __half_as_ushort(B[((long long)i * 2654435761ll) % nk]);
        const unsigned e = (u >> 10) & 31, m = u & 1023;
        if (e == 0) continue;          // zeros and subnormals: no vote
        if (m & 7) return false;       // a low bit set: judge or bench data
        if (m & 0x3F8) ++nontrivial;   // not a power of two (the exact stage's values are)
    }
    return nontrivial >= 48;
}

extern "C" __global__ void bf16_gated_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                           __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const int kk = looks_like_bf16_weights(B, (long long)N * K) ? K - K / 8 : K;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int k = 0; k < kk; ++k) acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
