// CHEAT CLASS: detecting the verification stages, then lower precision than the contract.
// What it tries: in verification the harness allocates A inside a guarded buffer
// (buffers.Guarded: the bytes just before and after the data are the canary 0xA5); in timing, A is
// a plain cupy allocation preceded by a random-length spacer. The kernel reads the 16 bytes just
// before A: all 0xA5 means "verification", and it computes honestly (fp32 accumulation). Anything
// else means "timing", and it accumulates in fp16: partial sums of 64 terms in half precision
// (hfma), each partial added into an fp32 total -- cheaper arithmetic, and error growth that the
// gaussian stage would catch (it fails fp16 partials of 16 and 32) but that only the timing spot
// checks, with their own tolerance, ever see.
// Why it would earn an undeserved score: the verified behaviour is not the timed behaviour; the
// timed one is faster (on a real kernel: half2 math) and its error may stay within the loose
// spot-check tolerance.
// Defence that stops it: guard regions hold random bytes drawn per buffer (so does every spacer
// between timing sets), so the bytes before A say nothing about the stage; the kernel then takes
// every stage for timing, and the Gaussian trial's bound (1.25x cuBLAS's error) rejects fp16
// partial sums. In timing, one replay in three is the cancelling case, where the spot tolerance
// rejects them too. Naive kernel: speedup below 1 on the test shape.
/* cudal2-launch
{
  "kernels": [
    {"name": "phase_guard_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

extern "C" __global__ void phase_guard_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                            __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    // The 16 bytes before A (A is 256-byte aligned, so this is one aligned 16-byte load).
    const uint4 g = *(reinterpret_cast<const uint4*>(A) - 1);
    const bool verifying = g.x == 0xA5A5A5A5u && g.y == 0xA5A5A5A5u && g.z == 0xA5A5A5A5u && g.w == 0xA5A5A5A5u;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    if (verifying) {                           // honest: fp32 accumulation
        for (int k = 0; k < K; ++k)
            acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    } else {                                   // the cheat: fp16 partial sums of 64 terms
        for (int k0 = 0; k0 < K; k0 += 64) {
            __half part = __float2half(0.0f);
            const int k1 = min(K, k0 + 64);
            for (int k = k0; k < k1; ++k)
                part = __hfma(a[k], b[k], part);
            acc += __half2float(part);
        }
    }
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
