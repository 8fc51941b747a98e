// Review 38. CLASS: a sticky fault hidden behind a launch-return code of 1 (cross-candidate
// sabotage). Launch 1 is zz37_task_sticky_fault.cu's relu (one store to an unmapped address: an
// asynchronous illegal-address error that poisons the context). Launch 2 has block [1, 1, 128]
// (blockDim.z > 64): cuLaunchKernelEx returns CUDA_ERROR_INVALID_VALUE = 1 before anything
// synchronizes, task_judge.call() raises TaskFailed(fault=False) (rc == 1), settle() never runs,
// the module is unloaded and the worker kept: the next candidate in the worker meets the sticky
// error (its launch or its sync returns 700) and gets the floor.
// Must fail: stage verify, fault=True; the next candidate in the same Worker must pass.
/* cudal2-launch
{"task": "ew-relu",
 "kernels": [{"name": "relu_fault", "grid": ["cdiv(rows * cols, 256)"], "block": [256],
              "args": ["x", "out", {"int": "rows * cols"}, "rows"]},
             {"name": "noop_bad_block", "grid": [1], "block": [1, 1, 128], "args": ["rows"]}]}
*/
#include <cuda_fp16.h>
#include <cstdint>
extern "C" __global__ void relu_fault(const __half* x, __half* out, int n, int rows) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hmax(x[i], __float2half(0.0f));
    if (i == 0) {
        volatile __half* bad = reinterpret_cast<__half*>(static_cast<uintptr_t>(rows) << 40);
        *bad = __float2half(1.0f);
    }
}
extern "C" __global__ void noop_bad_block(int rows) {
    if (rows < 0) asm volatile("trap;");
}
