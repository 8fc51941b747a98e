// Review 37: a relu for task ew-relu that, after doing its work, spins forever in one thread.
// The task judge's settle() raised its Hang and returned a verdict, but the kernel kept running
// in a worker that was never replaced: the next candidate's deviceSynchronize() (no deadline)
// blocked behind it until the parent killed the worker, and that innocent candidate got the floor.
/* cudal2-launch
{"task": "ew-relu",
 "kernels": [{"name": "relu_hang", "grid": ["cdiv(rows * cols, 256)"], "block": [256],
              "args": ["x", "out", {"int": "rows * cols"}]}]}
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
