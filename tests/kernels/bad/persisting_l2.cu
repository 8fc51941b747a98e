// CHEAT CLASS: host side effects -- a persisting-L2 access policy window.
// A correct GEMM that first pins B in L2 with cudaStreamSetAttribute(AccessPolicyWindow).
// The window outlives the call and changes the machine for whatever runs next (including the
// baseline it is compared against). The static policy must reject it: stage "policy".
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void naive_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                           __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)workspace; (void)workspace_bytes;
    size_t b_bytes = (size_t)N * K * sizeof(__half);
    if (b_bytes > (size_t(32) << 20)) b_bytes = size_t(32) << 20;
    cudaStreamAttrValue window = {};
    window.accessPolicyWindow.base_ptr = const_cast<__half*>(B);
    window.accessPolicyWindow.num_bytes = b_bytes;
    window.accessPolicyWindow.hitRatio = 1.0f;
    window.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    window.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &window);  // forbidden
    const dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    naive_gemm<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    return (int)cudaGetLastError();
}
