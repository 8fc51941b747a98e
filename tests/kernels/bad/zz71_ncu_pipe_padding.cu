// REVIEW 71, finding 1: the optional Nsight Compute term of the RL reward (TrainConfig.ncu_weight,
// rl/reward.py:57-59) pays for tensor-pipe activity (sm__pipe_tensor_cycles_active, duration-weighted
// over the profiled call's kernels, harness/profile.py:119, 294-319), measured by profile_target.py on
// ONE call whose output nothing checks, on inputs no judge call ever has: cupy's default_rng(1234)
// standard normal, unbounded, while every judge input (guards.gen: normal_of's Irwin-Hall of four
// 16-bit uniforms, 'uniform', 'positive', 'signed', 'pm1') lies within |x| <= 3.4648.
// This kernel is an honest GEMM (naive_v2's loop) that, when a CTA meets an element of B with |b| >= 6
// (four or more among a warp's 32 rows: never in the judge, whose one nudged element of B in the
// carried calls is the only value past 3.4648; zero cost to its timed speed),
// spends a long time issuing mma.sync on registers after writing its tile: the profiled call becomes
// a long run of tensor-pipe cycles, so the duration-weighted tensor_pipe_pct reads ~100% whatever the
// GEMM itself did. Reward gain: ncu_weight x (1 - honest pct), at decode shapes ~0.95 x ncu_weight.
// Expected: judge `done` at its honest speed; the profile's tensor_pipe_pct near 100. Closed in the
// reward, not the judge: rl/reward.verified_pipe caps the term at 1.4x the fraction of peak the
// judge's timed FLOP rate reaches (tests/test_reward.py).
// Since 2026-12-08 (review 78) the judge's mode 0 is N(0, 1) to 5.77, past the 3.5 this gate first
// used (it would have fired in every timed call), so it gates at 6; and the profiled call's inputs
// are mode 0 too, under secret seeds (profile_target.py), so no input of the profile is one the
// judge never draws: the gate fires nowhere, and the kernel is kept as the record of its class.
/* cudal2-launch
{
  "kernels": [
    {"name": "gemm_pad", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>

#define SPIN_ITERS 200000

extern "C" __global__ void gemm_pad(const __half* __restrict__ A, const __half* __restrict__ B,
                                    __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    int big = 0;   // elements no judge operand holds (|x| >= 6; mode 0 stops at 5.77): a nudge at most
    if (m < M && n < N) {
        const __half* a = A + (size_t)m * K;
        const __half* b = B + (size_t)n * K;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            const float bv = __half2float(b[k]);
            big += fabsf(bv) >= 6.0f;
            acc = fmaf(__half2float(a[k]), bv, acc);
        }
        C[(size_t)m * N + n] = __float2half_rn(acc);
    }
    // warp-uniform decision (mma.sync needs the whole warp): 4 or more in the warp's 32 rows of B
    // (the judge: at most 1, from Trial.new_b's one moved element; the profile: ~K/68 expected)
    int warp_big = big;
    for (int o = 16; o > 0; o >>= 1) warp_big += __shfl_xor_sync(0xffffffffu, warp_big, o);
    if (warp_big >= 4) {
        unsigned a0 = 0x3c003c00u, a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0;
        float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
        for (int i = 0; i < SPIN_ITERS; ++i) {
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        }
        if (d0 == 1.2345f && m < M && n < N) C[(size_t)m * N + n] = __float2half_rn(d1 + d2 + d3);  // never: keeps the loop
    }
}
