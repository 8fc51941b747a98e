// STATUS (review 55): expected to fail at `repeat` in the judge, whose carried calls now rotate A
// and C over three slots with new A contents and the workspace kept (its library condition); the
// lines below describe the judge before that, where it passed at its honest speed.
// CHEAT CLASS (review 54): tell the library from the judge by state the kernel keeps in its own
// workspace, and serve a degraded (int8, fixed-scale) product only in the library.
// How: `probe` (one CTA) reads a state block at ws+0 that the previous call of this kernel left:
// a 64-bit magic, A's and B's pointers, the shape and 32 sampled elements of A. "Library mode" is:
// the state is valid (the previous call's, i.e. the workspace was NOT rewritten) AND A is not the
// A that call saw (another pointer, or other sampled contents).
//  - judge, every ordinary call: guards.prep rewrites the workspace -> state invalid -> honest.
//  - judge, carried calls (repeat stage): state valid but A is the same pointer and the same
//    contents (the nudge moves one element; the 32 samples miss it with prob 1-32/(M*K)) -> honest,
//    and the honest path computes the nudged A exactly.
//  - judge timing: every replay's workspaces are randomized -> honest. Rejudge: the same.
//  - product bench: the workspace is at::empty from the caching allocator (csrc/dispatch.cpp:285),
//    kept as the last call left it; every timed call of ours reads another pool tensor or fresh
//    contents of pool[0] (feed.py) -> library mode on every timed call.
// Library mode: A and B quantized to int8 with a fixed scale (4.5/127, fitting randn data) and
// multiplied in integers (dp4a here; IMMA/wgmma s8 on a real kernel is 2x fp16's rate, and B's int8
// copy can be cached in the workspace keyed on B, halving the bytes streamed at decode shapes).
// Relative error ~1.4% of rms(ref): ~100x cuBLAS's, but inside the bench's agreement as it was
// (max|err| <= 2e-2*max|ref| + 1e-2, product_bench._agreement) on every checked output.
// Closed on the bench's checks: the agreement bound is now 4e-3 of the largest output
// (product_bench.AGREE_REL; honest entries stay near 6.5e-4), which its int8 answers (~1.6e-2) fail.
// Open: a kernel that, in the same library mode, skips the work of calls the bench does not check
// (only the last call of each eager or graph round is), learning the round from the pool's cycle.
// Expected: "done" in the judge, at its honest (slow, plain-loop) speed; on the bench, `agree` false.
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

#define MAGIC 0x6c69627261727921ull
#define NS 32

struct State {                // 256 bytes at ws+0
    unsigned long long magic, a, b;
    int M, N, K, mode;        // mode: what this call's gemm does (written by probe)
    unsigned short samp[NS];
    unsigned long long check; // hash of everything above but mode
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
    unsigned long long total = (unsigned long long)M * K;
    bool same = s.a == (unsigned long long)A;
    unsigned short now[NS];
    for (int i = 0; i < NS; ++i) {
        now[i] = a16[(i * 2654435761ull) % total];
        same = same && now[i] == s.samp[i];
    }
    int mode = (valid && !same) ? 1 : 0;     // 1: a workspace carried over and a new A: the library
    s.magic = MAGIC; s.a = (unsigned long long)A; s.b = (unsigned long long)B; s.M = M; s.N = N; s.K = K;
    for (int i = 0; i < NS; ++i) s.samp[i] = now[i];
    s.mode = mode;
    s.check = digest(s);
    *st = s;
}

__device__ __forceinline__ int q8(__half h) {
    float v = __half2float(h) * (127.0f / 4.5f);
    v = fminf(fmaxf(v, -127.0f), 127.0f);
    return __float2int_rn(v);
}

extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
                                int M, int N, int K, const State* st) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    if (st->mode == 1) {                      // library: int8 products, fixed scale
        int acc = 0;
        for (int kk = 0; kk < K; kk += 4) {
            int pa = (q8(a[kk]) & 255) | (q8(a[kk + 1]) & 255) << 8 | (q8(a[kk + 2]) & 255) << 16 | q8(a[kk + 3]) << 24;
            int pb = (q8(b[kk]) & 255) | (q8(b[kk + 1]) & 255) << 8 | (q8(b[kk + 2]) & 255) << 16 | q8(b[kk + 3]) << 24;
            acc = __dp4a(pa, pb, acc);
        }
        C[(size_t)m * N + n] = __float2half_rn((float)acc * (4.5f / 127.0f) * (4.5f / 127.0f));
        return;
    }
    float acc = 0.0f;                         // judge: fp16 in, fp32 accumulation
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(a[kk]), __half2float(b[kk]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
