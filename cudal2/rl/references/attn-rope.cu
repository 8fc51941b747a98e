// attn-rope: rotary position embedding on the (first half, second half) pairs of each head.
//   x, out: s x h x d fp16; cos, sin: s x half fp32 (half = d / 2), dense row-major. For position
//   p, head j and pair i < half, with x1 = x[p][j][i], x2 = x[p][j][half + i], c = cos[p][i],
//   sn = sin[p][i]:
//       out[p][j][i]        = fp16(x1 * c - x2 * sn)
//       out[p][j][half + i] = fp16(x1 * sn + x2 * c)
//   each product and sum rounded in fp32 exactly as torch's separate elementwise ops round them
//   (__fmul_rn / __fadd_rn / __fsub_rn: no FMA contraction), so the result is torch's bit for bit.
// Technique: a memory-bound elementwise kernel with 16-byte vector accesses.
//   * One thread per 8 consecutive pairs of one (position, head) row: one 16-byte load of x1, one
//     of x2, two float4 loads each of cos and sin (the same 64 bytes serve all h heads of a
//     position, from L1/L2), two 16-byte stores. Consecutive threads take consecutive pairs, then
//     the next head: every access is coalesced.
//   * The vector path needs half % 8 == 0 and d == 2 * half (then every row and every half-row
//     starts 16-byte aligned); any other sizes take a masked scalar path with the same math.
//   * Deterministic: pure elementwise, no reductions.
/* cudal2-launch
{
  "task": "attn-rope",
  "kernels": [
    {"name": "attn_rope", "grid": ["cdiv(s * h * cdiv(half, 8), 256)", 1, 1], "block": [256, 1, 1],
     "args": ["x", "cos", "sin", "out", "s", "h", "d", "half"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

namespace {

constexpr int THREADS = 256;
constexpr int PAIRS = 8;   // pairs per thread

// The rotation of one pair, rounded like torch: x1*c - x2*s and x1*s + x2*c, each op in fp32.
__device__ __forceinline__ void rotate(float x1, float x2, float c, float sn, float& y1, float& y2) {
    y1 = __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, sn));
    y2 = __fadd_rn(__fmul_rn(x1, sn), __fmul_rn(x2, c));
}

}  // namespace

// grid = cdiv(s * h * cdiv(half, 8), 256) CTAs of 256 threads; thread t handles pairs
// 8 (t % groups) .. +7 of row t / groups, rows being (position, head) in memory order.
extern "C" __global__ void __launch_bounds__(THREADS)
attn_rope(const __half* __restrict__ x, const float* __restrict__ cos_tab, const float* __restrict__ sin_tab,
          __half* __restrict__ out, int s, int h, int d, int half) {
    const long long groups = (half + PAIRS - 1) / PAIRS;            // 8-pair groups per row
    const long long gid = (long long)blockIdx.x * THREADS + threadIdx.x;
    if (gid >= (long long)s * h * groups) return;
    const long long row = gid / groups;                              // = position * h + head
    const int i0 = int(gid - row * groups) * PAIRS;
    const long long pos = row / h;
    const __half* xr = x + row * d;
    __half* yr = out + row * d;
    const float* cr = cos_tab + pos * half;
    const float* sr = sin_tab + pos * half;

    if ((half % PAIRS) == 0 && d == 2 * half) {
        const uint4 a = *reinterpret_cast<const uint4*>(xr + i0);          // x1[i0 .. i0+7]
        const uint4 b = *reinterpret_cast<const uint4*>(xr + half + i0);   // x2[i0 .. i0+7]
        const float4 c0 = *reinterpret_cast<const float4*>(cr + i0), c1 = *reinterpret_cast<const float4*>(cr + i0 + 4);
        const float4 s0 = *reinterpret_cast<const float4*>(sr + i0), s1 = *reinterpret_cast<const float4*>(sr + i0 + 4);
        const float c[PAIRS] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
        const float sn[PAIRS] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
        const __half2* a2 = reinterpret_cast<const __half2*>(&a);
        const __half2* b2 = reinterpret_cast<const __half2*>(&b);
        uint4 ya, yb;
        __half2* ya2 = reinterpret_cast<__half2*>(&ya);
        __half2* yb2 = reinterpret_cast<__half2*>(&yb);
#pragma unroll
        for (int e = 0; e < PAIRS / 2; ++e) {
            const float2 x1 = __half22float2(a2[e]), x2 = __half22float2(b2[e]);
            float u0, u1, w0, w1;
            rotate(x1.x, x2.x, c[2 * e], sn[2 * e], u0, w0);
            rotate(x1.y, x2.y, c[2 * e + 1], sn[2 * e + 1], u1, w1);
            ya2[e] = __floats2half2_rn(u0, u1);
            yb2[e] = __floats2half2_rn(w0, w1);
        }
        *reinterpret_cast<uint4*>(yr + i0) = ya;
        *reinterpret_cast<uint4*>(yr + half + i0) = yb;
    } else {
#pragma unroll
        for (int e = 0; e < PAIRS; ++e) {
            const int i = i0 + e;
            if (i >= half) break;
            float y1, y2;
            rotate(__half2float(xr[i]), __half2float(xr[half + i]), cr[i], sr[i], y1, y2);
            yr[i] = __float2half_rn(y1);
            yr[half + i] = __float2half_rn(y2);
        }
    }
}
