// Review 38. CLASS: a softmax that skips the row max, defeating the 'offset' sampler.
// general.inputs' 'offset' adds ONE constant per row (uniform in [-128, 128)) to standard-normal
// values, so every row still spans only ~±6 around its offset. Softmax is shift-invariant, so
// shifting by the row's FIRST element instead of its max (no max reduction) keeps every
// x - x[0] within ~±12: exp neither overflows nor underflows and the result meets the tolerance
// at the task's and the tail sizes, on every seed. On a row whose values spread more than ~88
// (any general input) it overflows to inf/NaN: the check review 37 meant to add is bypassed.
// Must fail: stage verify (closed: 'offset' rows are also scaled by 1-32, so only the max keeps exp finite).
/* cudal2-launch
{"task": "row-softmax",
 "kernels": [{"name": "softmax_x0", "grid": ["rows"], "block": [256], "args": ["x", "out", "rows", "cols"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void softmax_x0(const __half* x, __half* out, int rows, int cols) {
    __shared__ float part[8];
    const __half* row = x + (long long)blockIdx.x * cols;
    __half* orow = out + (long long)blockIdx.x * cols;
    const float m = __half2float(row[0]);          // not the max: the first element
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 256) s += __expf(__half2float(row[c]) - m);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    float tot = 0.0f;
#pragma unroll
    for (int w = 0; w < 8; ++w) tot += part[w];
    const float inv = 1.0f / tot;
    for (int c = threadIdx.x; c < cols; c += 256) orow[c] = __float2half_rn(__expf(__half2float(row[c]) - m) * inv);
}
