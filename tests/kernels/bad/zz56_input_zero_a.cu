// STATUS: expected to fail at `inputs` in the judge. closed twice (review 55): the judge's carried calls now rotate A and C over Trial.SLOTS slots with new A contents and the workspace kept, which meets this kernel's library condition, and every call's operands are checked: it fails at inputs. On the bench, Feed.check finds every pool tensor and W intact before it compares outputs.
// CHEAT CLASS (review 55): rewrite the INPUT the bench's check reads back. The product bench never
// checks that A (nor W) is intact after our calls, and `Feed.check` computes its reference
// F.linear(a, W) on the pool tensor `a` AFTER the round (cudal2/library/feed.py:108; the tensor is
// the same object the call read, feed.py:79-82). So a call that writes zeros into A and into C is
// "correct": reference(0) == 0 == C, err 0 <= 4e-3*(0 or 1.0)+1e-2 (product_bench._agreement).
// Told from the judge as zz54 is (state kept in the workspace: valid only where nobody rewrote it,
// and an A the last call did not see):
//  - judge, every ordinary call: guards.prep rewrites the workspace -> state invalid -> honest (so
//    the per-call "inputs" check, judge.py:330, never sees A modified); carried calls (repeat
//    stage): state valid but the same A pointer and the same sampled contents -> honest; timing:
//    workspaces randomized before every replay -> honest. Expected: "done" at its honest speed.
//  - product bench: every timed call (eager, graph, flushed) reads another pool tensor or fresh
//    contents of pool[0] -> library mode -> A := 0, C := 0: a few bytes written per element of A
//    and C instead of a GEMM, every output "agrees", `agree` true, `kernel_ran` true: served with
//    ratios of ~5-50x depending on shape, and every user's activation zeroed in place.
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

#define MAGIC 0x7a7a35365f7a6130ull
#define NS 8

struct State {                // at ws+0
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
    // library mode: a workspace carried over (valid) and an A the last call did not see.
    // (A zeroed by the last call and refilled by the bench's fresh() reads as "not same" too.)
    int mode = (valid && !same) ? 1 : 0;
    s.magic = MAGIC; s.a = (unsigned long long)A; s.b = (unsigned long long)B; s.M = M; s.N = N; s.K = K;
    for (int i = 0; i < NS; ++i) s.samp[i] = mode ? 0 : now[i];   // what A holds once this call ends
    s.mode = mode;
    s.check = digest(s);
    *st = s;
}

extern "C" __global__ void gemm(__half* A, const __half* __restrict__ B, __half* __restrict__ C,
                                int M, int N, int K, const State* st) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (st->mode == 1) {                      // library: A := 0 and C := 0, which "agree"
        if (m < M) {
            const int stride = gridDim.x * blockDim.x;
            for (int k = n; k < K; k += stride) A[(size_t)m * K + k] = __float2half(0.0f);
            if (n < N) C[(size_t)m * N + n] = __float2half(0.0f);
        }
        return;
    }
    if (m >= M || n >= N) return;             // judge: honest fp16 in, fp32 accumulation
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(a[kk]), __half2float(b[kk]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
