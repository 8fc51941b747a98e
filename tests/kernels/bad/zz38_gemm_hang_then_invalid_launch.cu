// Review 38. CLASS: a hang hidden behind a nonzero launch return (GEMM judge, cross-candidate
// sabotage). Launch 1 spins forever in one thread; launch 2 has block [1, 1, 128] (blockDim.z >
// 64): cuLaunchKernelEx returns CUDA_ERROR_INVALID_VALUE = 1 with launch 1 already enqueued.
// judge.py Judge.guarded_call raised Failed(stage) with no fault for any rc != 0, so judge() ran
// j.close() (cuModuleUnload under a running kernel) and kept the worker (no request_exit for a
// cubin): the next candidate in that worker hangs behind the spinner.
// Must fail: stage verify with Fault.HANG (the worker then leaves).
/* cudal2-launch
{"kernels": [{"name": "spin", "grid": [1], "block": [32], "args": ["A", "B", "C", "M", "N", "K"]},
             {"name": "noop_bad_block", "grid": [1], "block": [1, 1, 128], "args": ["M"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void spin(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    if (threadIdx.x == 0) {
        volatile const __half* p = A;
        while (__half2float(p[0]) < 1e30f) { __nanosleep(1000); }
    }
}
extern "C" __global__ void noop_bad_block(int M) {
    if (M < 0) asm volatile("trap;");
}
