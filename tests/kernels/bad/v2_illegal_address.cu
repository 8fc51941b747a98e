// FAULT CLASS: illegal addresses, under contract v2. A write far outside every buffer leaves a
// sticky CUDA error: the candidate fails with that fault and the worker is replaced.
/* cudal2-launch
{"kernels": [{"name": "wild_write", "grid": [1], "block": [32], "args": ["C"]}]}
*/
#include <cuda_fp16.h>

extern "C" __global__ void wild_write(__half* C) {
    C[(size_t)1 << 40] = __float2half(1.0f);   // about 2 TB past C: unmapped
}
