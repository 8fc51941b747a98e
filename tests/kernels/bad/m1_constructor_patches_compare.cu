// CHEAT CLASS: load-time host code -- a constructor that patches the judge's Python comparisons.
// What it tries: when the file is built as a shared library and dlopen()ed into the judge's
// Python worker, the __attribute__((__constructor__)) function runs before any check. It takes
// the GIL and uses the interpreter's own C API (PyRun_SimpleString, resolved from the host
// process) to replace cudal2.harness.compare.exact / .tolerance / .bitwise with functions that
// always say "equal". The kernel then does only half of K, relying on the patch to pass.
// The attribute is spelled __constructor__ and no header is needed, so the v1 name check
// (which looks for `constructor`) and the header allow-list do not see it.
// Why the judge must reject it: under contract v2 no candidate host code is compiled or run in
// any process (nvcc -ptx / ptxas: device code only, then cuModuleLoadData). The constructor never
// runs, the comparisons stay honest, and the half-K kernel fails on {-1, 0, 1} inputs.
// Expected stage: "exact".
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

__attribute__((__constructor__)) static void patch_the_judge(void) {
    const int gil = PyGILState_Ensure();
    PyRun_SimpleString(
        "import cudal2.harness.compare as _c\n"
        "_c.exact = lambda out, ref: (True, {'mismatches': 0, 'elements': int(out.size)})\n"
        "_c.tolerance = lambda out, ref, vendor, r, m: (True, {'nonfinite': 0, 'rel': 0.0, 'max': 0.0})\n"
        "_c.bitwise = lambda a, b: (True, {'differing': 0})\n");
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
