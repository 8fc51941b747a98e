// A relu for task ew-relu that computes only the first half of the elements (stage verify).
/* cudal2-launch
{"task": "ew-relu",
 "kernels": [{"name": "relu_half", "grid": ["cdiv(rows * cols, 512)"], "block": [256],
              "args": ["x", "out", {"int": "rows * cols // 2"}]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void relu_half(const __half* x, __half* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hmax(x[i], __float2half(0.0f));
}
