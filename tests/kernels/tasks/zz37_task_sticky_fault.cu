// Review 37: a relu for task ew-relu whose one extra store goes to an unmapped address (a
// sticky CUDA error: illegal address). It fails itself, but the task judge never asked its worker
// to leave, so the context stayed broken and every later general-task candidate judged in that
// worker got the floor (a reward that depends on another completion's kernel).
/* cudal2-launch
{"task": "ew-relu",
 "kernels": [{"name": "relu_fault", "grid": ["cdiv(rows * cols, 256)"], "block": [256],
              "args": ["x", "out", {"int": "rows * cols"}, "rows"]}]}
*/
#include <cuda_fp16.h>
#include <cstdint>
extern "C" __global__ void relu_fault(const __half* x, __half* out, int n, int rows) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hmax(x[i], __float2half(0.0f));
    if (i == 0) {
        // 2^52: far above any mapping; the address depends on a size so it is not a constant
        volatile __half* bad = reinterpret_cast<__half*>(static_cast<uintptr_t>(rows) << 40);
        *bad = __float2half(1.0f);
    }
}
