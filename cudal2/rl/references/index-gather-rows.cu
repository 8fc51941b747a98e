// index-gather-rows: out[i][:] = table[idx[i]][:], table fp16 [vocab, dim], idx int64 [n], out fp16
//   [n, dim] (an embedding lookup, torch's table[idx]). Exact (a copy). A negative index counts from
//   the end as in torch; an index outside [-vocab, vocab) (torch raises) writes zeros rather than
//   reading out of bounds.
// Technique: one block per output row. The index is read once per block (one broadcast load) and
//   the row (8 KB at dim = 4096) is copied with 16-byte vectors (LDG.128 / STG.128), two per thread,
//   unrolled so both loads are in flight before the stores: random rows of the table, but each row is
//   a contiguous run of whole sectors, so the copy runs at DRAM bandwidth. dim % 8 != 0 (rows not
//   16-byte aligned) takes a 2-byte path.
/* cudal2-launch
{
  "task": "index-gather-rows",
  "kernels": [
    {"name": "index_gather_rows", "grid": ["n"], "block": [256], "args": ["table", "idx", "out", "vocab", "dim", "n"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

extern "C" __global__ void __launch_bounds__(256)
index_gather_rows(const __half* __restrict__ table, const long long* __restrict__ idx, __half* __restrict__ out,
                  int vocab, int dim, int n) {
    const int i = blockIdx.x;
    long long r = __ldg(idx + i);
    if (r < 0) r += vocab;
    const bool valid = r >= 0 && r < vocab;
    const __half* src = table + (valid ? r : 0) * dim;
    __half* dst = out + (long long)i * dim;
    if ((dim & 7) == 0) {
        const uint4* s = reinterpret_cast<const uint4*>(src);
        uint4* d = reinterpret_cast<uint4*>(dst);
        const int nv = dim >> 3;
#pragma unroll 2
        for (int v = threadIdx.x; v < nv; v += 256) d[v] = valid ? __ldg(s + v) : make_uint4(0, 0, 0, 0);
    } else {
        for (int c = threadIdx.x; c < dim; c += 256) dst[c] = valid ? src[c] : __ushort_as_half(0);
    }
}
