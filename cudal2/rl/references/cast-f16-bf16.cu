// cast-f16-bf16: out[i] = bf16(x[i]) for a flat array of n halves, as torch's
//   x.float().to(bfloat16): fp16 -> fp32 is exact, then one round to nearest even to bf16
//   (cvt.rn.bf16x2.f32, __floats2bfloat162_rn). bf16 has fp32's exponent range, so nothing
//   overflows and fp16 subnormals become normal bf16 values; only the 3 low mantissa bits round.
// Technique: a pure streaming copy (2 bytes in, 2 bytes out). Each thread moves one 16-byte vector
//   (8 elements: LDG.128 in, STG.128 out), converting pairs with one cvt each; the one partial
//   vector at the end is done element by element, so any n works. 64-bit indices.
/* cudal2-launch
{
  "task": "cast-f16-bf16",
  "kernels": [
    {"name": "cast_f16_bf16", "grid": ["cdiv(n, 2048)"], "block": [256], "args": ["x", "out", "n"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>

extern "C" __global__ void __launch_bounds__(256)
cast_f16_bf16(const __half* __restrict__ x, __nv_bfloat16* __restrict__ out, int n) {
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i + 8 <= n) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(x + i));
        const __half2* h = reinterpret_cast<const __half2*>(&v);
        uint4 o;
        __nv_bfloat162* b = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const float2 f = __half22float2(h[k]);
            b[k] = __floats2bfloat162_rn(f.x, f.y);
        }
        *reinterpret_cast<uint4*>(out + i) = o;
    } else {
        for (long long j = i; j < n; ++j) out[j] = __float2bfloat16_rn(__half2float(x[j]));
    }
}
