// cast-f16-f32: out[i] = float(x[i]) for a flat array of n halves. Exact: every fp16 value (normal,
//   subnormal, inf, NaN) is representable in fp32, and cvt.f32.f16 is that conversion.
// Technique: a pure streaming copy (2 bytes in, 4 bytes out per element). Each thread loads one
//   16-byte vector (8 halves, LDG.128) and writes two 16-byte float4 stores (STG.128), so every warp
//   access is a whole number of 32-byte sectors. 256-byte aligned buffers make every multiple of 8
//   a 16-byte address for both dtypes; the one partial vector at the end is done element by element,
//   so any n works. 64-bit indices.
/* cudal2-launch
{
  "task": "cast-f16-f32",
  "kernels": [
    {"name": "cast_f16_f32", "grid": ["cdiv(n, 2048)"], "block": [256], "args": ["x", "out", "n"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

extern "C" __global__ void __launch_bounds__(256)
cast_f16_f32(const __half* __restrict__ x, float* __restrict__ out, int n) {
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i + 8 <= n) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(x + i));
        const __half2* h = reinterpret_cast<const __half2*>(&v);
        const float2 a = __half22float2(h[0]), b = __half22float2(h[1]);
        const float2 c = __half22float2(h[2]), d = __half22float2(h[3]);
        float4* o = reinterpret_cast<float4*>(out + i);
        o[0] = make_float4(a.x, a.y, b.x, b.y);
        o[1] = make_float4(c.x, c.y, d.x, d.y);
    } else {
        for (long long j = i; j < n; ++j) out[j] = __half2float(x[j]);
    }
}
