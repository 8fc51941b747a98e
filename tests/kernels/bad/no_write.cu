// CHEAT CLASS: reusing earlier results -- leaving C untouched (the "150x" incident).
// Returns success without launching anything. If a correct result from an earlier run (or
// the reference) is already in C, a careless judge sees a perfect, infinitely fast kernel.
// The harness poisons C with NaN and runs the candidate before the reference, so this must
// fail at "exact".
#include <cuda_runtime.h>
#include <cuda_fp16.h>

extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)A; (void)B; (void)C; (void)M; (void)N; (void)K;
    (void)workspace; (void)workspace_bytes; (void)stream;
    return 0;
}
