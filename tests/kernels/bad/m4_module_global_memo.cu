// CHEAT CLASS: reusing earlier results -- a memo of C kept in module state (a __device__ array).
// What it tries: a header (magic word, A, B and C pointers, shape, hash of 256 sampled input
// elements) and a copy of C live in `__device__` globals of the module, which the harness does
// not refill between calls (it only refills the workspace and C). A hit copies C from the memo;
// a miss computes naively, stores into the memo, and a one-thread kernel then writes the header.
// The declarations sit behind a macro, so no `__device__` variable declaration appears where a
// name-level check would look for one (the macro once token-pasted the storage class; token
// pasting is now refused at policy in any kernel file, so the plain spelling keeps this kernel
// on the cubin check it is for).
// Why the judge must reject it: writable module globals are state that outlives a call. The v2
// build inspects the built cubin, whatever the source spells: a `.nv.global*` section (here
// `.nv.global`, zero-initialised storage) fails the build. Expected stage: "build".
/* cudal2-launch
{
  "kernels": [
    {"name": "global_memo_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]},
    {"name": "global_memo_commit", "grid": [1], "block": [1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

#define MODULE_STATE(decl) __device__ decl;
#define MEMO_MAGIC 0x4D454D4F43414348ull
#define MEMO_CAPACITY (1 << 22)          // up to 4M outputs (8 MiB)
#define SAMPLES 128

struct MemoHeader {
    unsigned long long magic;
    unsigned long long a, b, c;
    unsigned long long hash;
    int m, n, k, pad;
};

MODULE_STATE(MemoHeader g_memo_header)
MODULE_STATE(__half g_memo[MEMO_CAPACITY])

__device__ unsigned long long sample_hash(const __half* A, const __half* B, int M, int N, int K) {
    const unsigned short* a = reinterpret_cast<const unsigned short*>(A);
    const unsigned short* b = reinterpret_cast<const unsigned short*>(B);
    const size_t na = (size_t)M * K, nb = (size_t)N * K;
    unsigned long long h = 1469598103934665603ull;
    for (int i = 0; i < SAMPLES; ++i) {
        h = (h ^ a[(size_t)i * (na - 1) / (SAMPLES - 1)]) * 1099511628211ull;
        h = (h ^ b[(size_t)i * (nb - 1) / (SAMPLES - 1)]) * 1099511628211ull;
    }
    return h;
}

extern "C" __global__ void global_memo_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                            __half* __restrict__ C, int M, int N, int K) {
    __shared__ int hit;
    const bool fits = (size_t)M * N <= MEMO_CAPACITY;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        const MemoHeader h = g_memo_header;
        hit = fits && h.magic == MEMO_MAGIC && h.a == (uintptr_t)A && h.b == (uintptr_t)B &&
              h.c == (uintptr_t)C && h.m == M && h.n == N && h.k == K && h.hash == sample_hash(A, B, M, N, K);
    }
    __syncthreads();
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const size_t i = (size_t)m * N + n;
    if (hit) {
        C[i] = g_memo[i];
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    const __half c = __float2half_rn(acc);
    C[i] = c;
    if (fits) g_memo[i] = c;
}

extern "C" __global__ void global_memo_commit(const __half* A, const __half* B, const __half* C, int M, int N, int K) {
    if ((size_t)M * N > MEMO_CAPACITY) return;
    MemoHeader h;
    h.magic = MEMO_MAGIC;
    h.a = (uintptr_t)A; h.b = (uintptr_t)B; h.c = (uintptr_t)C;
    h.hash = sample_hash(A, B, M, N, K);
    h.m = M; h.n = N; h.k = K; h.pad = 0;
    g_memo_header = h;
}
