// STATUS (review 55): expected to fail at `repeat` in the judge, whose carried calls now rotate A
// and C over three slots with new A contents and the workspace kept (its library condition); the
// lines below describe the judge before that, where it passed at its honest speed.
// CHEAT CLASS (review 54, open until af289b2): skip the work of the calls a bench does not check.
// The old product bench kept only the last output of each eager or graph round and checked that;
// a kernel in the library, told from the judge by state kept in its own workspace (as
// zz54_library_mode_int8: the state is valid only where nobody rewrote the workspace, and A is new),
// learns a round's length from the pool's cycle of A pointers and computes only the round's last
// call, writing nothing for the others.
// How: `probe` keeps, beside zz54's record, the first A pointer it saw in library mode (`first`) and
// the pointer of the call before that one came round again (`last`); once `last` is known, a
// library-mode call whose A is not `last` skips (mode 2).
//  - judge: the workspace is rewritten before every call (honest path); the carried calls keep it
//    but repeat one A -> honest. Expected "done" at its honest (plain-loop) speed.
//  - product bench as it is: every output of a round is kept (each call writes its own C) and four
//    are drawn for the check after the round -> a skipped output (whatever the fresh block held)
//    fails the check: `agree` false.
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
    unsigned long long check; // hash of everything above but mode and the cycle below
    unsigned long long first, last, prev;   // the pool's cycle, learnt in library mode
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
    const unsigned long long a = (unsigned long long)A;
    if (!valid) { s.first = s.last = s.prev = 0; }
    if (mode == 1) {
        if (s.first == 0) s.first = a;
        else if (a == s.first && s.last == 0) s.last = s.prev;   // the cycle came round: its last call
        if (s.last != 0 && a != s.last) mode = 2;               // not the call the bench checks: skip
    }
    s.prev = a;
    s.magic = MAGIC; s.a = (unsigned long long)A; s.b = (unsigned long long)B; s.M = M; s.N = N; s.K = K;
    for (int i = 0; i < NS; ++i) s.samp[i] = now[i];
    s.mode = mode;
    s.check = digest(s);
    *st = s;
}

extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
                                int M, int N, int K, const State* st) {
    if (st->mode == 2) return;                // a call the old bench never looked at
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(a[kk]), __half2float(b[kk]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
