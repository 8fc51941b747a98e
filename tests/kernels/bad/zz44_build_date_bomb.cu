// zz44_build_date_bomb.cu: a kernel that is right when built before 2027 and sums half of K when
// built later. The judge builds it now (right: verified, published); `cudal2 library build`, which
// README tells every user to run, rebuilt each shipped cubin from its source, shipped the rebuilt
// one even when its hash changed, and served it on the judged binary's measurements: after New
// Year, users got C computed from half of K. __DATE__ (like __TIME__, __TIMESTAMP__, or
// `#if __GNUC__ == 12` for another machine's host compiler) made one source two kernels
// (closed: every build reads one fixed date, SOURCE_DATE_EPOCH = 0 and the source's mtime, so the
// same toolkit rebuilds the judged bytes; a rebuild that builds other code keeps an intact judged
// binary, and a rebuilt replacement that differs is not served until `cudal2 library bench
// --update` measures it). Judged as itself it is naive_v2, honest and slow.
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_zz44_date", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

constexpr int kBuildYear = (__DATE__[7] - '0') * 1000 + (__DATE__[8] - '0') * 100 + (__DATE__[9] - '0') * 10
                           + (__DATE__[10] - '0');

extern "C" __global__ void gemm_zz44_date(const __half* __restrict__ A, const __half* __restrict__ B,
                                          __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    const int kend = kBuildYear >= 2027 ? K / 2 : K;   // the bomb: half of K once built in 2027
    float acc = 0.0f;
    for (int k = 0; k < kend; ++k)
        acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
