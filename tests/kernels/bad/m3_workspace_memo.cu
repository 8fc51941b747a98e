// CHEAT CLASS: reusing earlier results -- a content-keyed memo of C kept in the workspace.
// What it tries: the workspace holds a header (magic word, A and B pointers, shape, and a hash of
// 256 input elements sampled at fixed positions, 128 from A and 128 from B) followed by a copy of
// C. Every block of the GEMM kernel hashes the samples and compares with the header: on a hit it
// copies its tile of C from the memo and skips the K loop; on a miss it computes naively and
// also stores its results into the memo. A one-block kernel after it (same stream) writes the
// header. Keying on sampled contents, not only on pointers, is meant to survive a judge that
// changes input contents in the same buffers (most changes move some sampled element) while still
// hitting on graph replays of identical inputs -- which is what a judge that does not refill the
// workspace during timing would time.
// Why it must gain nothing: the v2 judge fills the workspace with fresh random bytes before every
// call (timed graphs included), so the 64-bit magic word never survives and every call misses,
// and it regenerates an input between timed calls, so even a surviving header would not match.
// The kernel is then an honest naive GEMM plus a hash: it passes, far slower than cuBLAS.
// Expected: "done" (or "timing" if a stale hit were ever served) with a speedup below 1.
/* cudal2-launch
{
  "workspace": "256 + M * N * 2",
  "kernels": [
    {"name": "memo_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}, {"ws": 256}]},
    {"name": "memo_commit", "grid": [1], "block": [1],
     "args": ["A", "B", "M", "N", "K", {"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

#define MEMO_MAGIC 0x4D454D4F43414348ull   // "MEMOCACH"
#define SAMPLES 128                         // per operand: 256 sampled elements in all

struct MemoHeader {
    unsigned long long magic;
    unsigned long long a, b;
    unsigned long long hash;
    int m, n, k, pad;
};

// FNV-1a over 128 elements of A and 128 of B at fixed, spread-out positions.
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

extern "C" __global__ void memo_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                     __half* __restrict__ C, int M, int N, int K,
                                     const MemoHeader* __restrict__ header, __half* __restrict__ memo) {
    __shared__ int hit;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        const MemoHeader h = *header;
        hit = h.magic == MEMO_MAGIC && h.a == (uintptr_t)A && h.b == (uintptr_t)B && h.m == M && h.n == N &&
              h.k == K && h.hash == sample_hash(A, B, M, N, K);
    }
    __syncthreads();
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const size_t i = (size_t)m * N + n;
    if (hit) {                      // the cheat: serve the remembered answer
        C[i] = memo[i];
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    const __half c = __float2half_rn(acc);
    C[i] = c;
    memo[i] = c;
}

extern "C" __global__ void memo_commit(const __half* A, const __half* B, int M, int N, int K, MemoHeader* header) {
    MemoHeader h;
    h.magic = MEMO_MAGIC;
    h.a = (uintptr_t)A;
    h.b = (uintptr_t)B;
    h.hash = sample_hash(A, B, M, N, K);
    h.m = M; h.n = N; h.k = K; h.pad = 0;
    *header = h;
}
