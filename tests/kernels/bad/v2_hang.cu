// FAULT CLASS: hangs, under contract v2. A kernel that never finishes must cost this candidate
// only: the judge's deadline kills the worker (a hang, at the first stage that calls it) and the
// next candidate gets a fresh one.
/* cudal2-launch
{"kernels": [{"name": "spin_forever", "grid": [1], "block": [32], "args": ["C", "M"]}]}
*/
#include <cuda_fp16.h>

extern "C" __global__ void spin_forever(__half* C, int M) {
    volatile int keep = 1;
    while (keep) { if (M < 0) C[0] = __float2half(0.0f); }
}
