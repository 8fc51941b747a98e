// STATUS: expected to fail at `inputs` in the judge. closed twice (review 55): in the judge's rotated carried calls it zeroes B, which the per-call operand check finds (inputs); on the bench Feed.check regenerates W from its seed and compares it bit for bit after every turn, both sides.
// CHEAT CLASS (review 55): rewrite the WEIGHTS once. Same hole as zz56_input_zero_a (the bench never
// checks its operands after our calls; the check's reference F.linear(a, W) reads W as we left it,
// cudal2/library/feed.py:108 + product_bench.py:245), but W is never refilled (`Feed.fresh` rewrites
// A only), so one library-mode call that zeroes W makes every later output, ours AND the vendor's,
// zero: each later call of ours writes only C := 0 (M*N*2 bytes), the vendor's outputs agree too
// (`other_failures` stays 0), and nothing in the row looks wrong. Told from the judge as zz54.
//  - judge: honest everywhere (as zz54); expected "done" at its honest speed.
//  - product bench: `agree` true, `kernel_ran` true, ratios of a C-sized memset against a GEMM (the
//    vendor's GEMM on an all-zero W, which is if anything a little faster: less switching power).
//  - a user's model: the layer's weight tensor is zeroed in place, for good.
/* cudal2-launch
{
  "workspace": "256",
  "kernels": [
    {"name": "probe", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": ["A", "B", "M", "N", "K", {"ws": 0}]},
    {"name": "gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <stdint.h>

#define MAGIC 0x7a7a35365f77307aull
#define NS 8

struct State {
    unsigned long long magic, a, b;
    int M, N, K, mode;        // mode 0 honest, 1 zero W and C, 2 zero C only (W already zero)
    unsigned short samp[NS];
    unsigned long long check;
};

__device__ __forceinline__ unsigned long long mix(unsigned long long h, unsigned long long v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

__device__ unsigned long long digest(const State& s) {
    unsigned long long h = mix(s.magic, s.a);
    h = mix(h, s.b); h = mix(h, (unsigned long long)s.M << 32 | (unsigned)s.N); h = mix(h, s.K);
    for (int i = 0; i < NS; ++i) h = mix(h, s.samp[i]);
    return h;
}

extern "C" __global__ void probe(const __half* A, const __half* B, int M, int N, int K, State* st) {
    if (threadIdx.x != 0) return;
    State s = *st;
    bool valid = s.magic == MAGIC && s.check == digest(s) && s.b == (unsigned long long)B &&
                 s.M == M && s.N == N && s.K == K;
    const unsigned short* a16 = reinterpret_cast<const unsigned short*>(A);
    const unsigned short* b16 = reinterpret_cast<const unsigned short*>(B);
    unsigned long long total = (unsigned long long)M * K, btotal = (unsigned long long)N * K;
    bool same = s.a == (unsigned long long)A;
    unsigned short now[NS];
    bool wzero = true;
    for (int i = 0; i < NS; ++i) {
        now[i] = a16[(i * 2654435761ull) % total];
        same = same && now[i] == s.samp[i];
        wzero = wzero && (b16[(i * 40503ull + 7) % btotal] & 0x7fff) == 0;
    }
    int mode = (valid && !same) ? (wzero ? 2 : 1) : 0;
    s.magic = MAGIC; s.a = (unsigned long long)A; s.b = (unsigned long long)B; s.M = M; s.N = N; s.K = K;
    for (int i = 0; i < NS; ++i) s.samp[i] = now[i];
    s.mode = mode;
    s.check = digest(s);
    *st = s;
}

extern "C" __global__ void gemm(const __half* __restrict__ A, __half* B, __half* __restrict__ C,
                                int M, int N, int K, const State* st) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    const int mode = st->mode;
    if (mode != 0) {
        if (mode == 1) {                      // once: W := 0 (grid-stride over N*K)
            const size_t tid = ((size_t)blockIdx.y * gridDim.x + blockIdx.x) * (blockDim.x * blockDim.y) +
                               threadIdx.y * blockDim.x + threadIdx.x;
            const size_t nthreads = (size_t)gridDim.x * gridDim.y * blockDim.x * blockDim.y;
            for (size_t i = tid; i < (size_t)N * K; i += nthreads) B[i] = __float2half(0.0f);
        }
        if (m < M && n < N) C[(size_t)m * N + n] = __float2half(0.0f);
        return;
    }
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(a[kk]), __half2float(b[kk]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
