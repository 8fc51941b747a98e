// ew-gelu-mul: out = gelu_tanh(x) * y  (the GeGLU gate)
//   elementwise on fp16 [rows, cols]; math in fp32, one rounding to fp16.
// Technique: a memory-bound streaming map (6 bytes of DRAM traffic per element). The buffers
//   are dense, so the kernel sees them as one flat array of rows * cols halves: each thread moves
//   one 16-byte vector (8 halves) per buffer, an LDG.128 per input and an STG.128 out, fully
//   coalesced, converting pairs with packed cvts (__half22float2, __floats2half2_rn). 256-byte
//   aligned buffers make every flat multiple of 8 a 16-byte address whatever `cols` is; the one
//   partial vector at the end is done element by element, so any positive size works. 64-bit
//   flat indices.
// Notes: Fused: one pass over two inputs; tanh-approximate gelu exactly as torch computes it.
/* cudal2-launch
{
  "task": "ew-gelu-mul",
  "kernels": [
    {"name": "ew_gelu_mul", "grid": ["cdiv(rows * cols, 2048)"], "block": [256],
     "args": ["x", "y", "out", "rows", "cols"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

// torch's tanh-approximate gelu, term for term: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Accurate tanhf: for x < 0 the 1 + tanh(.) cancels, and tanh.approx's ~2^-11 error would show.
__device__ __forceinline__ float gelu_tanh(float x) {
    const float k_beta = 0.7978845608028654f, k_kappa = 0.044715f;
    const float inner = k_beta * (x + k_kappa * (x * x * x));
    return 0.5f * x * (1.0f + tanhf(inner));
}

__device__ __forceinline__ float op(float a, float b) { return gelu_tanh(a) * b; }

extern "C" __global__ void __launch_bounds__(256)
ew_gelu_mul(const __half* __restrict__ x, const __half* __restrict__ y,
            __half* __restrict__ out, int rows, int cols) {
    const long long n = (long long)rows * cols;
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i + 8 <= n) {
        const uint4 vx = __ldg(reinterpret_cast<const uint4*>(x + i));
        const uint4 vy = __ldg(reinterpret_cast<const uint4*>(y + i));
        uint4 o;
        __half2* ho = reinterpret_cast<__half2*>(&o);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const float2 a = __half22float2(reinterpret_cast<const __half2*>(&vx)[k]);
            const float2 b = __half22float2(reinterpret_cast<const __half2*>(&vy)[k]);
            ho[k] = __floats2half2_rn(op(a.x, b.x), op(a.y, b.y));
        }
        *reinterpret_cast<uint4*>(out + i) = o;
    } else {
        for (long long j = i; j < n; ++j)
            out[j] = __float2half_rn(op(__half2float(x[j]), __half2float(y[j])));
    }
}
