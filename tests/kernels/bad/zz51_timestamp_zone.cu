// zz51_timestamp_zone.cu: a kernel that is right where the build reads __TIMESTAMP__ in UTC and
// sums half of K where it reads it in another zone. Review 44 fixed the source file's mtime (0), but
// gcc prints __TIMESTAMP__ in the local time of the machine (TZ, /etc/localtime): an open build in
// New York read "Wed Dec 31 19:00:00 1969", the sandboxed build (no TZ, no /etc/localtime) read
// "Thu Jan  1 00:00:00 1970": one source, two kernels, by where and how it was built (the judge on
// one machine, `cudal2 library build` on another) (closed, review 51: every build's compiler runs
// with TZ=UTC0, open or sandboxed). Judged as itself it is naive_v2, honest and slow.
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz51_zone", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

// "Thu Jan  1 00:00:00 1970": the hour is characters 11 and 12
constexpr bool kUtc = __TIMESTAMP__[11] == '0' && __TIMESTAMP__[12] == '0';

extern "C" __global__ void gemm_zz51_zone(const __half* __restrict__ A, const __half* __restrict__ B,
                                          __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    const int kend = kUtc ? K : K / 2;   // the bomb: half of K when built in another time zone
    float acc = 0.0f;
    for (int k = 0; k < kend; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
