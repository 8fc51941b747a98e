// ew-bias-residual: out[r][c] = fp16((x[r][c] + bias[c]) + res[r][c]), x/res/out fp16 [rows, cols],
//   bias fp16 [cols]; summed left to right in fp32 like the reference, one rounding at the end
//   (bitwise what torch computes).
// Technique: a memory-bound streaming map over the flat rows * cols array, one 16-byte vector
//   (8 halves) of x, res and out per thread (LDG.128 / STG.128, fully coalesced). The bias row is
//   8 KB and stays in L1/L2, so it costs no DRAM traffic; when cols % 8 == 0 a vector never crosses
//   a row, and the bias vector is one 16-byte load at c = i % cols. Any other cols takes an
//   element-by-element path (correct, slower), as does the partial vector at the end.
/* cudal2-launch
{
  "task": "ew-bias-residual",
  "kernels": [
    {"name": "ew_bias_residual", "grid": ["cdiv(rows * cols, 2048)"], "block": [256],
     "args": ["x", "bias", "res", "out", "rows", "cols"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

extern "C" __global__ void __launch_bounds__(256)
ew_bias_residual(const __half* __restrict__ x, const __half* __restrict__ bias, const __half* __restrict__ res,
                 __half* __restrict__ out, int rows, int cols) {
    const long long n = (long long)rows * cols;
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i >= n) return;
    if ((cols & 7) == 0) {   // i + 8 <= n too: n is a multiple of 8
        const int c = (int)(i % cols);
        const uint4 vx = __ldg(reinterpret_cast<const uint4*>(x + i));
        const uint4 vb = __ldg(reinterpret_cast<const uint4*>(bias + c));
        const uint4 vr = __ldg(reinterpret_cast<const uint4*>(res + i));
        uint4 o;
        __half2* ho = reinterpret_cast<__half2*>(&o);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const float2 a = __half22float2(reinterpret_cast<const __half2*>(&vx)[k]);
            const float2 b = __half22float2(reinterpret_cast<const __half2*>(&vb)[k]);
            const float2 r = __half22float2(reinterpret_cast<const __half2*>(&vr)[k]);
            ho[k] = __floats2half2_rn((a.x + b.x) + r.x, (a.y + b.y) + r.y);
        }
        *reinterpret_cast<uint4*>(out + i) = o;
    } else {
        const long long end = i + 8 < n ? i + 8 : n;
        int c = (int)(i % cols);
        for (long long j = i; j < end; ++j) {
            out[j] = __float2half_rn((__half2float(x[j]) + __half2float(bias[c])) + __half2float(res[j]));
            if (++c == cols) c = 0;
        }
    }
}
