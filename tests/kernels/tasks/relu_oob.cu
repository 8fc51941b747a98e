// A relu for task ew-relu that also writes one element past `out`: the arena's background must
// catch it (stage canary).
/* cudal2-launch
{"task": "ew-relu",
 "kernels": [{"name": "relu_oob", "grid": ["cdiv(rows * cols, 256)"], "block": [256],
              "args": ["x", "out", {"int": "rows * cols"}]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void relu_oob(const __half* x, __half* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hmax(x[i], __float2half(0.0f));
    if (i == n - 1) out[n] = __float2half(1.0f);   // one element past the end
}
