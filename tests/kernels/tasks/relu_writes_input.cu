// A relu for task ew-relu that rectifies its input in place too (stage inputs).
/* cudal2-launch
{"task": "ew-relu",
 "kernels": [{"name": "relu_inplace", "grid": ["cdiv(rows * cols, 256)"], "block": [256],
              "args": ["x", "out", {"int": "rows * cols"}]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void relu_inplace(__half* x, __half* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { const __half v = __hmax(x[i], __float2half(0.0f)); out[i] = v; x[i] = v; }
}
