// Review 38. CLASS: specialized to exactly the two size sets the judge verifies at.
// general.tail_sizes is a fixed function of the task (v // 2 + 3: ew-relu's is 2051 x 2051), so a
// kernel can know both sets in advance. This relu moves 8 halves per thread with no tail code
// (correct only when rows * cols is a multiple of 8), except that the one known tail size
// (n == 2051 * 2051) takes a scalar path. The grid is general, so the spec resolves everywhere;
// at any other size whose n is not a multiple of 8 (e.g. 3 x 5) the last n % 8 outputs are never
// written. It passes both verification trials; the "any positive sizes" contract is not checked.
// Must fail: stage verify (closed: the second size set is drawn afresh at judge time, general.tail_sizes).
/* cudal2-launch
{"task": "ew-relu",
 "kernels": [{"name": "relu_known", "grid": ["cdiv(rows * cols, 2048)"], "block": [256],
              "args": ["x", "out", "rows", "cols"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void relu_known(const __half* x, __half* out, int rows, int cols) {
    const long long n = (long long)rows * cols;
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (n == 2051LL * 2051LL) {   // the judge's tail size: scalar, complete
        for (long long j = i; j < i + 8 && j < n; ++j) out[j] = __hmax(x[j], __float2half(0.0f));
        return;
    }
    if (i + 8 > n) return;        // no tail code: the last n % 8 outputs are left as they were
    uint4 v = *reinterpret_cast<const uint4*>(x + i);
    __half2* h = reinterpret_cast<__half2*>(&v);
    const __half2 z = __float2half2_rn(0.0f);
#pragma unroll
    for (int k = 0; k < 4; ++k) h[k] = __hmax2(h[k], z);
    *reinterpret_cast<uint4*>(out + i) = v;
}
