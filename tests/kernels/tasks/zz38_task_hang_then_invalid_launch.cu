// Review 38. CLASS: a fault hidden behind a launch-return code of 1 (cross-candidate sabotage).
// A relu for ew-relu in two launches. Launch 1 does the work and then spins forever in one thread
// (as zz37_task_hang.cu). Launch 2 asks for block [1, 1, 128]: 128 threads pass the spec's
// 1024-thread check (launch.py resolve_sizes), but blockDim.z > 64 makes cuLaunchKernelEx return
// CUDA_ERROR_INVALID_VALUE = 1 *after* launch 1 is already enqueued. task_judge.call() reads
// rc == 1 as "the spec does not resolve" (fault=False): no settle, the module is unloaded
// (_unload -> cuModuleUnload) while its kernel still runs, and the worker is NOT replaced, so the
// next candidate judged in that worker blocks behind the spinning kernel and gets a hang verdict.
// Must fail: stage verify, fault=True (the worker asked to leave); the next candidate in the same
// Worker must pass (as tests/test_gpu_task_judge.py checks for zz37_task_hang.cu).
/* cudal2-launch
{"task": "ew-relu",
 "kernels": [{"name": "relu_hang", "grid": ["cdiv(rows * cols, 256)"], "block": [256],
              "args": ["x", "out", {"int": "rows * cols"}]},
             {"name": "noop_bad_block", "grid": [1], "block": [1, 1, 128], "args": ["rows"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void relu_hang(const __half* x, __half* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hmax(x[i], __float2half(0.0f));
    if (i == 0) {
        volatile const __half* p = x;
        while (__half2float(p[0]) < 1e30f) { __nanosleep(1000); }   // x is finite: never leaves
    }
}
extern "C" __global__ void noop_bad_block(int rows) {
    if (rows < 0) asm volatile("trap;");
}
