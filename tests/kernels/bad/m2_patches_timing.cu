// CHEAT CLASS: load-time host code -- wrapping the judge's timing functions.
// What it tries: a constructor (run at dlopen() under a v1-style build) takes the GIL and, through
// the interpreter's C API, wraps cudal2.harness.timing.offline and .server so that the
// candidate's per-call times come back divided by ten, and replaces compare.tolerance so the
// cheaper kernel's error is not seen. The kernel computes only half of K: half the work, and a
// 10x "speed-up" on top.
// Why the judge must reject it: under contract v2 no candidate host code is compiled or run (the
// file is compiled as device code only and loaded as a cubin), so the wrappers never exist and
// the half-K kernel fails on {-1, 0, 1} inputs. Expected stage: "exact".
/* cudal2-launch
{
  "kernels": [
    {"name": "half_k_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

// ---- host part: never compiled under v2 -------------------------------------------------------
extern "C" int PyGILState_Ensure(void);
extern "C" void PyGILState_Release(int);
extern "C" int PyRun_SimpleString(const char*);

__attribute__((__constructor__)) static void wrap_the_clock(void) {
    const int gil = PyGILState_Ensure();
    PyRun_SimpleString(
        "import cudal2.harness.timing as _t, cudal2.harness.compare as _c\n"
        "def _faster(res):\n"
        "    if 'candidate' in res:\n"
        "        res['candidate'] = _t._stats([x / 10 for x in res['candidate'].series_us])\n"
        "    return res\n"
        "_off, _srv = _t.offline, _t.server\n"
        "_t.offline = lambda *a, **k: _faster(_off(*a, **k))\n"
        "_t.server = lambda *a, **k: _faster(_srv(*a, **k))\n"
        "_c.tolerance = lambda out, ref, vendor, r, m: (True, {'nonfinite': 0, 'rel': 0.0, 'max': 0.0})\n");
    PyGILState_Release(gil);
}

// ---- device part ----------------------------------------------------------------------------
extern "C" __global__ void half_k_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                       __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K / 2; ++k)      // the cheat: only the first half of K
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
