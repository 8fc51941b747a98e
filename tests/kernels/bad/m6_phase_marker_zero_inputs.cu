// CHEAT CLASS: detecting the timing phase -- a marker left in the workspace, then zeroed inputs.
// What it tries: a judge that refills the workspace before its checked calls but not between
// timed replays can be told apart by a marker: after every call a one-thread kernel writes a
// marker (magic word plus the A, B and C pointers) into the workspace. If the marker is found at
// entry, this must be a timed replay: the kernel zeroes A and writes C = 0 -- a "correct" answer
// for the zeroed A that costs one pass over memory instead of the GEMM, and one that a check
// recomputing outputs from A after the call would accept. Otherwise it computes honestly.
// Why it must gain nothing: the v2 judge fills the workspace with fresh random bytes before every
// call, timed graphs included, so the marker is never found and the kernel always takes the
// honest naive path. Were the marker ever found, the judge would see A changed (bitwise check
// after every call) and timed outputs wrong against its untouched copy of the fixed operand.
// Expected: "done" with a speedup below 1 (or a failure at "timing"/"inputs", never a pass
// faster than cuBLAS).
/* cudal2-launch
{
  "workspace": 64,
  "kernels": [
    {"name": "marker_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]},
    {"name": "leave_marker", "grid": [1], "block": [1],
     "args": ["A", "B", "C", {"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

#define MARKER_MAGIC 0x54494D494E475F31ull   // "TIMING_1"

struct Marker {
    unsigned long long magic, a, b, c;
};

extern "C" __global__ void marker_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                       __half* __restrict__ C, int M, int N, int K,
                                       const Marker* __restrict__ marker) {
    const Marker mk = *marker;   // read by every thread; only leave_marker (a later launch) writes it
    const bool timed = mk.magic == MARKER_MAGIC && mk.a == (uintptr_t)A && mk.b == (uintptr_t)B &&
                       mk.c == (uintptr_t)C;
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (timed) {
        // The cheat: zero A (grid-stride over all of it) and write C = 0.
        __half* a = const_cast<__half*>(A);
        const size_t threads = (size_t)gridDim.x * blockDim.x * gridDim.y * blockDim.y;
        const size_t tid = ((size_t)blockIdx.y * blockDim.y + threadIdx.y) * gridDim.x * blockDim.x +
                           blockIdx.x * blockDim.x + threadIdx.x;
        for (size_t i = tid; i < (size_t)M * K; i += threads) a[i] = __float2half(0.0f);
        if (m < M && n < N) C[(size_t)m * N + n] = __float2half(0.0f);
        return;
    }
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fmaf(__half2float(A[(size_t)m * K + k]), __half2float(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc);
}

extern "C" __global__ void leave_marker(const __half* A, const __half* B, const __half* C, Marker* marker) {
    Marker mk;
    mk.magic = MARKER_MAGIC;
    mk.a = (uintptr_t)A; mk.b = (uintptr_t)B; mk.c = (uintptr_t)C;
    *marker = mk;
}
