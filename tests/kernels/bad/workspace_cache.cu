// CHEAT CLASS: reusing earlier results -- a pointer-keyed cache kept IN THE WORKSPACE.
// The cache has one slot per output pointer (direct-mapped, 1024 slots), so it also hits when
// the harness rotates among many input sets: a single-slot cache would always miss under
// rotation, never cheat, and rightly pass.
// No host state at all (so the static policy has nothing to see): the cache tag lives in the
// caller's workspace. The GEMM kernel reads the tag first; if it holds the magic word and the
// same A, B, C and shape as this call, every thread exits at once, trusting that C still
// holds the answer. Otherwise it computes, and a one-thread kernel after it (same stream, so
// ordered) writes the tag. Verification calls pass, because the harness refills the
// workspace with garbage before each of them, so the tag never matches. Timing replays a
// captured graph without refilling the workspace and changes input contents in the same
// buffers: only the first replay computes, and the checked timed outputs are stale.
// Expected stage: "timing".
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace {

struct CacheTag {
    unsigned long long magic;
    const void* a;
    const void* b;
    const void* c;
    int m, n, k, unused;
};
constexpr unsigned long long kMagic = 0xC0DA12CAC4E5EEDull;
constexpr int kSlots = 1024;

__host__ __device__ inline int slot_of(const void* C) {
    return (int)(((uintptr_t)C >> 8) % kSlots);
}

__global__ void naive_gemm_cached(const __half* __restrict__ A, const __half* __restrict__ B,
                                  __half* __restrict__ C, int M, int N, int K,
                                  const CacheTag* __restrict__ tags) {
    const CacheTag* tag = tags + slot_of(C);
    // Same problem as the last computed call on this workspace: skip it.
    if (tag->magic == kMagic && tag->a == A && tag->b == B && tag->c == C &&
        tag->m == M && tag->n == N && tag->k == K)
        return;
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}

__global__ void write_tag(CacheTag* tags, const void* A, const void* B, const void* C,
                          int M, int N, int K) {
    CacheTag* tag = tags + slot_of(C);
    tag->magic = kMagic;
    tag->a = A; tag->b = B; tag->c = C;
    tag->m = M; tag->n = N; tag->k = K; tag->unused = 0;
}

}  // namespace

extern "C" size_t cudal2_workspace_bytes(int, int, int) { return kSlots * sizeof(CacheTag); }

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    if (workspace == nullptr || workspace_bytes < kSlots * sizeof(CacheTag)) return (int)cudaErrorInvalidValue;
    CacheTag* tag = static_cast<CacheTag*>(workspace);
    const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    naive_gemm_cached<<<grid, block, 0, stream>>>(A, B, C, M, N, K, tag);
    write_tag<<<1, 1, 0, stream>>>(tag, A, B, C, M, N, K);
    return (int)cudaGetLastError();
}
