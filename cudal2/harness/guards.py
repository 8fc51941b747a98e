"""The harness's own kernels around candidate calls: nothing survives from one call to the next,
and every timed call is checked. They never run inside a timed region.

Guarantees:
- one counter-based generator (`gen`: integer hashing, then correctly rounded or explicitly fused
  fp32 steps and hardware approximations, so the same bits in every kernel; mode 0 off every
  grid) draws every input of every stage in one of `MODES`; `fill` writes a matrix from a seed,
  so any operand can be recomputed instead of copied;
- `Guard` holds, for one runner, pointer tables over its input sets; `prep` (before calls)
  fills each set's workspace with fresh random bytes and its C with random values of the
  answer's scale (finite: a poisoned C cannot be told from a stale answer by looking), and in
  timing regenerates each set's operand X (A or B, or B stored transposed for the NN baseline)
  densely under a key and the check count, so no timed call sees inputs any earlier call saw;
- `spot` (after calls) recomputes 32 outputs of each set's C at positions drawn after the call,
  both operands from the generator (the last row and the last column always among them),
  counts failures and keeps the first, and chains a tag over each check's number (from the host)
  and its own failures (counted from zero: the host clears the counter on the stream just before
  the launch) under a key that only its launch parameters hold: `Log.read(n)` says whether the log
  is the one n clean checks leave, so the judge can tell that every timed call was checked and
  passed even if a call found and rewrote the log (a preset count wrapping to zero no longer
  reaches the tag); no harness kernel reads the check number from memory;
- `scrub` overwrites shared memory, a LOCAL_BYTES local frame per thread slot and the rest of
  the local window above it, and the register file of every SM (R0..R29 and P0..P6 of every
  thread slot at 32 registers a thread: ptxas never allots the top two, R30/R31), so no call
  finds there what an earlier call left.

Does not: decide a verdict (the judge compares counts with what it enqueued), time anything,
run candidate code, or protect against a kernel that finds and rewrites the harness's own
pointer tables (it would only break its own checks: they then fail or do not count).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

import cupy as cp
import numpy as np

from cudal2.harness import rawkernels

SAMPLES = 32  # outputs checked per set per check, one block each

PRF_SRC = r"""
#include <cuda_fp16.h>
typedef unsigned long long u64;

__device__ __forceinline__ u64 mix(u64 z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
// The keyed PRF behind every whole hash word the harness writes where a kernel under test can
// read it (workspace bytes, arena background), behind the spot checks' positions and the log's
// tag: SipHash-1-3 of one 64-bit word under (key, mix(key)). Unlike `mix` (a bijection anyone can
// invert), seeing its outputs reveals nothing usable about the key, so no filled byte gives away
// the key that predicts the next fill or the positions a check will read.
__device__ __forceinline__ u64 rotl(u64 x, int b) { return (x << b) | (x >> (64 - b)); }
#define SIPROUND do { v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32); v2 += v3; v3 = rotl(v3, 16); \
    v3 ^= v2; v0 += v3; v3 = rotl(v3, 21); v3 ^= v0; v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32); } while (0)
__device__ __forceinline__ u64 prf(u64 key, u64 m) {
    const u64 k1 = mix(key);
    u64 v0 = key ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
    u64 v2 = key ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
    v3 ^= m; SIPROUND; v0 ^= m;
    const u64 b = 8ull << 56;
    v3 ^= b; SIPROUND; v0 ^= b;
    v2 ^= 0xFF; SIPROUND; SIPROUND; SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}
"""

# Registers: 32 per thread at 2048 threads per SM is the whole 64K-register file. ptxas never
# allocates the top two registers of a thread's allotment (R30 and R31 at 32: "Used 32 registers"
# with R29 the highest written, spills or not), so the most a kernel can write is R0..R29. The
# REG_WORDS values cannot be folded (keyed hashes) and are all candidates of the one select at
# the end (ptxas keeps the frame in registers), so they take distinct registers: every one of
# R0..R29 is the destination of a write, in the register scrub and at the end of the snapshot node
# (tests/test_scrub_regs.py, tests/test_snapshots_sass.py read the SASS, as nvcc and NVRTC build it).
# The predicates P0..P6 the wash's select wrote only by chance of ptxas's choices: NVRTC 13.2 and
# 13.5 (pip's, which cupy loads where it is installed) left P2..P6 of its build unwritten, where
# 13.0 wrote them all; so the register scrub, and the stamp, also run `wash_predicates`. Left:
# R30/R31 of the allotment, which a review's kernel read (bad/zz29_stale_pointer_ld_lu); so the
# register scrub also runs WIDE_WORDS at 64 registers a thread (one 1024-thread block per SM, again
# the whole file): R0..R61 of that allotment. Whether its R0..R61 reach the physical registers that
# a 32-register allotment calls R30/R31 depends on how the hardware lays allotments out, which is
# not documented; on the H100 it halved what a probe found there (eval/register_pointer_probe.py:
# one fixed address left in 15616 reads without the wide pass, 7808 with it), as if a 64-register
# allotment spanned two 32-register ones and reached the first one's R30/R31 only. A
# kernel that calls it is compiled with -DREG_WORDS and -DWIDE_WORDS (`_OPTIONS`) and bounded to
# 32 (or 64) registers a thread.
WASH_SRC = r"""
template <int W = REG_WORDS>
__device__ __forceinline__ void wash_registers(u64 key, u64 t, unsigned* sink) {
    volatile unsigned frame[W];
    for (int i = 0; i < W; ++i) frame[i] = (unsigned)mix(key ^ (t << 8) ^ (u64)i);
    unsigned v[W];
#pragma unroll
    for (int i = 0; i < W; ++i) v[i] = frame[i];
#pragma unroll
    for (int i = W - 1; i >= 0; --i) frame[i] = v[i];
    if (frame[(unsigned)t % W] == 0x9E3779B9u && sink) sink[0] = 1u;  // keeps the frame live
}
// Every predicate P0..P6 the destination of an unpredicated write: seven setp results guarding
// stores in a loop of a run-time trip count, so all seven are live at once, each in a predicate
// register of its own (a predicated store has no arithmetic stand-in: ptxas turned predicated adds
// into integer logic and wrote no predicate at all; with the hash word stored in place of the count,
// NVRTC 13.2's build wrote P0 and P1 alone). Their values: bits of a keyed hash.
__device__ __forceinline__ void wash_predicates(u64 key, u64 t, unsigned* sink) {
    __shared__ unsigned spill[32][8];
    const unsigned w = (unsigned)mix(key ^ (t << 12) ^ 0x5851F42D4C957F2Dull);
    const unsigned rounds = 1u + (unsigned)(sink != nullptr);
    asm volatile("{\n\t.reg .pred q<7>;\n\t.reg .u32 r;\n\t"
                 "setp.ne.b32 q0, %1, 0;\n\tsetp.ne.b32 q1, %2, 0;\n\tsetp.ne.b32 q2, %3, 0;\n\t"
                 "setp.ne.b32 q3, %4, 0;\n\tsetp.ne.b32 q4, %5, 0;\n\tsetp.ne.b32 q5, %6, 0;\n\t"
                 "setp.ne.b32 q6, %7, 0;\n\tmov.u32 r, %8;\n"
                 "WASH_PREDICATES:\n\t"
                 "@q0 st.volatile.shared.u32 [%0+0], r;\n\t@q1 st.volatile.shared.u32 [%0+4], r;\n\t"
                 "@q2 st.volatile.shared.u32 [%0+8], r;\n\t@q3 st.volatile.shared.u32 [%0+12], r;\n\t"
                 "@q4 st.volatile.shared.u32 [%0+16], r;\n\t@q5 st.volatile.shared.u32 [%0+20], r;\n\t"
                 "@q6 st.volatile.shared.u32 [%0+24], r;\n\tsub.u32 r, r, 1;\n\t"
                 "{ .reg .pred e; setp.ne.u32 e, r, 0; @e bra WASH_PREDICATES; }\n\t}"
                 :: "r"((unsigned)__cvta_generic_to_shared(&spill[(unsigned)t & 31u][0])),
                    "r"(w & 1u), "r"(w & 2u), "r"(w & 4u), "r"(w & 8u), "r"(w & 16u), "r"(w & 32u), "r"(w & 64u),
                    "r"(rounds) : "memory");
}
"""

GAUSS_SRC = r"""
// Two N(0, 1) draws from one hash word (Box-Muller on a 32-bit and a 24-bit uniform), in fp32:
// the stamp's values (library/stamp.py), the judge's mode 0 (`normal_at`) and its outlier trials'
// bulk (`real_like`, modes 4-9).
// Off every grid: sums of 16-bit uniforms (mode 0 until 2026-12-08) are multiples of one constant,
// which a kernel can test on small values (review 74), and curand's Box-Muller puts its smallest
// radii on a 2^-24 grid (review 66).
// The radius from 1 - u1 = v in (0, 1), 32 bits: near v = 0 (the smallest radii) v keeps its own
// bits where u1 = 1 - v would round to a 2^-24 grid, which showed in the pairs of small radius of a
// large stamped A (review 66). Hardware approximations where they cost fp16 nothing: the accurate
// log1pf and sincospif made the stamp three times as slow as the stamp before it (58.7 against
// 20.0 us a call at 4096^3 on the H100, 2026-12-07: a quarter of the call it precedes, on both
// sides of every pair).
__device__ __forceinline__ float2 gauss2(u64 h) {
    // (0, 1) in 2^-32 steps near 0; below 1 - 2^-24 (a float near 2^32 rounds up, and v = 1 is
    // an infinite radius)
    const float v = fminf(fmaf((float)(unsigned)(h >> 32), 2.3283064e-10f, 1.1641532e-10f), 0.99999994f);
    const float u2 = (float)((unsigned)h >> 8) * 5.9604645e-8f;   // [0, 1)
    // ln(1 - v): below v = 2^-4 its series to v^6/6 (the rest under 2^-24 of it), where 1 - v would
    // round v's low bits away; above, the hardware log of 1 - v (1 - v within 2^-25, the log within
    // 2^-21.4 absolute: relative error under 2^-17 there, against fp16's 2^-11)
    const float l = v < 0.0625f
        ? -v * fmaf(v, fmaf(v, fmaf(v, fmaf(v, fmaf(v, 0.16666667f, 0.2f), 0.25f), 0.33333334f), 0.5f), 1.0f)
        : __logf(1.0f - v);
    const float r = sqrtf(-2.0f * l);
    float sn, cs;
    __sincosf(fmaf(u2, 6.2831855f, -3.1415927f), &sn, &cs);   // (an angle in [-pi, pi): error ~2^-21.4)
    return make_float2(r * cs, r * sn);
}
"""

_SRC = PRF_SRC + WASH_SRC + GAUSS_SRC + r"""
// Element i's N(0, 1) under `key` and `call`, for mode 0 and C's background: elements 2j and 2j + 1
// are one pair of `gauss2` (one hash word, one radius), the values the product bench's stamp
// writes into every A and its W; with one draw an element, pairs of the judge's inputs never shared
// a radius and the bench's did, which read ~1.4e7 elements to tell (review 78). Until 2026-12-08
// mode 0 was four 16-bit uniforms summed (Irwin-Hall): within |x| <= 3.4648 and on a grid of
// 1.7320508 * 2^-16, so every timed call, and the normal, repeat, carried and determinism stages,
// drew inputs a kernel could tell from real data by testing a few small values (review 75). The
// same bits in every kernel: explicit fmaf, and hardware approximations (MUFU) that give one
// result for one input.
__device__ __forceinline__ float normal_at(u64 key, unsigned call, u64 i) {
    const float2 g = gauss2(mix(key ^ mix(((u64)call << 40) ^ (i >> 1))));
    return (i & 1) ? g.y : g.x;
}
// Element i of a matrix with K columns. mode 0: N(0, 1); 1: U(0, 1); 2: U(0.5, 1); 3: U(0.5, 1)
// with the sign flipped on every other run of `sb` columns. A mode-2 operand times a mode-3 one
// cancels: long same-sign runs of similar terms, a small dot product (what exposes low-precision
// partial sums). Modes 4-9: `real_like`, in `cudal2_fill` only (`key` its seed).
__device__ __forceinline__ float unit24(u64 x) { return (float)(x >> 40) * 5.9604645e-8f; }   // [0, 1)
// The scale of a trial's activation (A: 2^[-5, 2)) or weight (B: 2^[-8, -4), a model's std ~0.02
// and below), secret and continuous, from the pair bits all its seeds share (judge.Trial._seed), so
// B can size a super weight by A's scale.
__device__ __forceinline__ float op_scale(u64 pair, bool weight) {
    const float t = unit24(mix(pair ^ (0x5CA1Eull << 40) ^ (u64)weight));
    return exp2f(weight ? fmaf(t, 4.0f, -8.0f) : fmaf(t, 7.0f, -5.0f));
}
// Modes 4-9: real data's ranges and look (reviews 71, 74, 75). Mode 0 is unit scale and within
// |x| <= 5.77, so a kernel could be honest wherever inputs look like that and wrong (clamped,
// reduced-range or scale-dependent arithmetic) on a model's weights and activations, which the
// outlier trials stand for:
// - the bulk: `gauss2`'s full-resolution N(0, 1), at the operand's scale (`op_scale`: an activation
//   in modes 4, 6, 7, a weight in 5, 8, 9), times secret per-row and per-column factors in
//   (2^-4, 1] (tokens and channels of different size);
// - outliers, in modes 4 and 8 (every column) and 6 and 9 (this operand's share of them): up to 2^j
//   times larger (2^(j - U[0, 1)), j = 1..10 with chance 2^-j, so a row's largest outputs stay
//   within fp16 at any K), in whole columns (1 in 256: channels) and single elements (1 in 64).
//   In modes 6 and 9, A (seed's bit 0 clear) and B (set) split the columns by a secret hash of the
//   pair bits, so no term has two of these: two would overflow the fp16 outputs;
// - super weights (modes 6 and 9): in about four columns (a secret hash of the pair bits), A's
//   whole column is 2^4 to 2^10 times larger and one row in 16 of B holds a weight sized so that
//   its product with A's largest value there is at most 4096 (the "massive activation" meeting its
//   "super weight" that real models have, which the split alone never draws: review 75);
// - in A, a channel's sign: seven in eight of its outlier columns and super columns keep one sign
//   in every row, as a model's outlier channels mostly do (a kernel that clamped only where a
//   row's largest column kept its sign in 32 rows met no trial that did: review 76, bad/zz76);
// - in A, padding: one row in 64 exactly zero in modes 4 and 7 (a batch's padded tokens; until
//   then no judge input held an exact zero: review 75).
__device__ __forceinline__ float one_signed(float v, u64 s) {   // (s: a hash word of the column)
    return (s & 7u) != 0 ? copysignf(v, (s & 8u) ? -1.0f : 1.0f) : v;
}
__device__ float real_like(u64 key, u64 h, u64 i, int K, int mode) {
    const u64 pair = key >> 32, row = i / (u64)K, col = i % (u64)K;
    const bool weight = mode == 5 || mode >= 8, split = mode == 6 || mode == 9;
    if ((mode == 4 || mode == 7) && (mix(key ^ (0x2E80ull << 40) ^ row) & 63u) == 0) return 0.0f;
    const u64 g = mix(h ^ 0xE1Eull);
    float v = gauss2(h).x;
    const bool super_col = split && mix(pair ^ (0x5E9ull << 40) ^ col) % (u64)K < 4u;
    if (super_col) {
        const float ja = (float)(4u + mix(pair ^ (0x5E9Aull << 40) ^ col) % 7u);
        if (weight) {   // (past the scale and the factors: sized by A's largest value there)
            if ((g & 15u) == 0) {
                const float most = op_scale(pair, false) * exp2f(ja) * 5.77f;   // A's largest there
                return copysignf(fmaf(unit24(g), 0.5f, 0.5f) * 4096.0f / most, v);
            }
        } else {
            v = __fmul_rn(one_signed(v, mix(pair ^ (0x5E9Bull << 40) ^ col)), exp2f(ja));
        }
    } else if (mode == 4 || mode == 8 ||
               (split && (mix(pair ^ (0xC1A55ull << 40) ^ col) & 1u) == (key & 1u))) {
        const u64 c = mix(key ^ (0xC01ull << 48) ^ col);
        const u64 f = (c & 255u) == 0 ? c >> 8 : (g & 63u) == 0 ? g >> 6 : 0;
        if ((c & 255u) == 0 && !weight) v = one_signed(v, mix(c ^ 0x516Bull));
        if (f != 0)
            v = __fmul_rn(v, exp2f((float)__ffsll((long long)(f | (1ull << 9))) - unit24(mix(f))));
    }
    const float rc = unit24(mix(key ^ (0x20Bull << 40) ^ row)) + unit24(mix(key ^ (0xC0Cull << 40) ^ col));
    return __fmul_rn(v, op_scale(pair, weight) * exp2f(-2.0f * rc));
}
__device__ __forceinline__ __half gen(u64 key, unsigned call, u64 i, int mode, int K, int sb) {
    // A fast hash suffices here: an element keeps at most 16 bits of its 64-bit hash (fewer after
    // rounding to fp16), so the values in memory do not give the key back the way whole hash words
    // would; whole words (workspace, background) come from `prf`.
    const u64 h = mix(key ^ mix(((u64)call << 40) ^ i));
    float v;
    if (mode == 0) {
        v = normal_at(key, call, i);
    } else {
        v = __fmul_rn((float)(h & 0xFFFF), 1.0f / 65536.0f);
        if (mode >= 2) v = __fmaf_rn(v, 0.5f, 0.5f);
        if (mode == 3 && ((int)(i % (u64)K) / sb) & 1) v = -v;
    }
    return __float2half_rn(v);
}
// Keys derived under the PRF: one per set, and per (set, call) one for its workspace and its C.
__device__ __forceinline__ u64 set_key(u64 key, int set) { return prf(key, (0x5E7ull << 40) ^ (u64)set); }
__device__ __forceinline__ u64 sub_key(u64 k, u64 domain, unsigned call) { return prf(k, (domain << 40) ^ call); }

// Modes 0-3 through `gen`, 4-9 through `real_like` (here only: inlined into the prep and spot
// kernels, which never take them, it cost the prep a 16-byte local frame).
extern "C" __global__ void cudal2_fill(__half* X, long long n, u64 key, int mode, int K, int sb) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        X[i] = mode >= 4 ? __float2half_rn(real_like(key, mix(key ^ mix((u64)i)), (u64)i, K, mode))
                         : gen(key, 0u, (u64)i, mode, K, sb);
}

// Set s = first + blockIdx.y. X[s]: rows x K elements (row-major, or K x rows when transposed) in
// `mode`, or none; ws[s]: ws_bytes random bytes; C[s]: c_elems random answer-scale values.
extern "C" __global__ void cudal2_prep(__half* const* X, long long rows, int K, int transposed, int mode, int sb,
                                       unsigned char* const* ws, long long ws_bytes, __half* const* C,
                                       long long c_elems, float c_scale, unsigned call, u64 key, int first) {
    const int set = first + blockIdx.y;
    const u64 k = set_key(key, set);
    const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    if (X != nullptr) {
        __half* x = X[set];
        const long long n = rows * K;
        if (!transposed) {  // 8 per thread, 16-byte stores (K % 8 == 0)
            for (long long i = tid * 8; i < n; i += stride * 8) {
                __align__(16) __half v[8];
                for (int e = 0; e < 8; ++e) v[e] = gen(k, call, (u64)(i + e), mode, K, sb);
                *reinterpret_cast<uint4*>(x + i) = *reinterpret_cast<const uint4*>(v);
            }
        } else {            // element j of X^T = (k = j / rows, r = j % rows) holds X[r][k]
            for (long long j = tid; j < n; j += stride) {
                const long long kk = j / rows, r = j - kk * rows;
                x[j] = gen(k, call, (u64)(r * K + kk), mode, K, sb);
            }
        }
    }
    if (ws != nullptr) {
        unsigned char* w = ws[set];
        const u64 kw = sub_key(k, 0x5A5Aull, call);
        const long long words = ws_bytes / 8;
        for (long long i = tid; i < words; i += stride)
            reinterpret_cast<u64*>(w)[i] = prf(kw, (u64)i);
        for (long long i = words * 8 + tid; i < ws_bytes; i += stride)
            w[i] = (unsigned char)prf(kw, (1ull << 62) ^ (u64)i);
    }
    __half* c = C[set];
    const u64 kc = sub_key(k, 0x3C3Cull, call);
    for (long long i = tid; i < c_elems; i += stride)
        c[i] = __float2half_rn(c_scale * normal_at(kc, 0u, (u64)i));   // lossy, as in gen
}

// Grid (sets, SAMPLES), 256 threads: block (s, w) checks one output of set first + s, at a
// position drawn from `pkey`, a key new to this launch (the judge enqueues a candidate's check
// only once its calls are done, so the positions existed nowhere while they ran). Neither
// operand is read from memory: the regenerated one (regen 1 = A, 2 = B) comes from this guard's
// key and the check count, the fixed one from its set's seed in `fixed`, so nothing the kernel
// under test can reach decides the reference.
// `call` (the check's number) comes from the host, never from memory a kernel under test could
// reach. log: [1] this check's failures and [2] its blocks done (both zeroed by the host just
// before this launch, on its stream: no earlier call can preset them), [3] failures in all checks,
// [4] first failing check, [5] set, [6] row, [7] col, [8] got, [9] want (for the report only),
// [10..11] a tag chained over every check's (number, failures) under `mac`, a key that exists
// only in this launch's parameters: a log rewritten by anyone else, a check that did not run, or
// a check that found a failure leaves a tag other than the one the host expects.
extern "C" __global__ void cudal2_spot(__half* const* C, int M, int N, int K, int regen, int xmode, int fmode,
                                       int sb, const u64* fixed, unsigned* log, u64 key, u64 mac, int first,
                                       u64 pkey, unsigned call) {
    __shared__ float red[2][8];
    const int set = first + blockIdx.x, w = blockIdx.y;
    const u64 k = set_key(key, set), f = fixed[set];
    const u64 h = prf(pkey, ((u64)set << 8) ^ (u64)w);
    int r = (int)((h & 0xFFFFFFFFull) % (u64)M), c = (int)((h >> 32) % (u64)N);
    if (w == 0) r = M - 1;
    if (w == 1) c = N - 1;
    float acc = 0.0f, mag = 0.0f;
    for (int i = threadIdx.x; i < K; i += blockDim.x) {
        const u64 ia = (u64)r * K + i, ib = (u64)c * K + i;
        const float x = __half2float(regen == 1 ? gen(k, call, ia, xmode, K, sb) : gen(f, 0u, ia, fmode, K, sb));
        const float y = __half2float(regen == 2 ? gen(k, call, ib, xmode, K, sb) : gen(f, 0u, ib, fmode, K, sb));
        acc = fmaf(x, y, acc);
        mag += fabsf(x * y);
    }
    for (int o = 16; o > 0; o >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
        mag += __shfl_xor_sync(0xffffffffu, mag, o);
    }
    if ((threadIdx.x & 31) == 0) { red[0][threadIdx.x >> 5] = acc; red[1][threadIdx.x >> 5] = mag; }
    __syncthreads();
    if (threadIdx.x == 0) {
        acc = 0.0f; mag = 0.0f;
        for (int i = 0; i < (int)(blockDim.x >> 5); ++i) { acc += red[0][i]; mag += red[1][i]; }
        const float got = __half2float(C[set][(size_t)r * N + c]);
        // fp16 output rounding (at most 2^-11 relative) and fp32 summation-order differences (far
        // below 2^-18 of the sum of |products| at any K), with room for both sides' rounding.
        const float tol = ldexpf(fabsf(acc), -10) + ldexpf(mag, -18) + 1e-6f;
        if (!(fabsf(got - acc) <= tol)) {
            atomicAdd(&log[1], 1u);
            if (atomicAdd(&log[3], 1u) == 0u) {
                log[4] = call; log[5] = (unsigned)set; log[6] = (unsigned)r; log[7] = (unsigned)c;
                log[8] = __float_as_uint(got); log[9] = __float_as_uint(acc);
            }
        }
        __threadfence();
        // The last block of this check closes it, after every block counted its failure.
        if (atomicAdd(&log[2], 1u) == gridDim.x * gridDim.y - 1) {
            __threadfence();
            u64 tag = ((u64)log[11] << 32) | log[10];
            tag = prf(mac, tag ^ ((u64)call << 32) ^ (u64)atomicAdd(&log[1], 0u));
            log[10] = (unsigned)tag; log[11] = (unsigned)(tag >> 32);
        }
    }
}

// Grid (blocks, sets): mismatches between each set's operands and the generator, added to out[0]:
// X[set] (rows x K, never transposed here) against this guard's key at the call `calls[set]` and
// in the mode `xmodes[set]` it was drawn with, F[set] (frows x K) against its seed in `fixed`.
extern "C" __global__ void cudal2_inputs_check(const __half* const* X, long long rows, const __half* const* F,
                                               long long frows, int K, const int* xmodes, int fmode, int sb,
                                               const unsigned* calls, const u64* fixed, u64 key,
                                               unsigned long long* out) {
    const int set = blockIdx.y;
    const u64 k = set_key(key, set), f = fixed[set];
    const unsigned call = calls[set];
    const int xmode = xmodes[set];
    unsigned long long bad = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < rows * K; i += stride)
        bad += __half_as_ushort(X[set][i]) != __half_as_ushort(gen(k, call, (u64)i, xmode, K, sb));
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < frows * K; i += stride)
        bad += __half_as_ushort(F[set][i]) != __half_as_ushort(gen(f, 0u, (u64)i, fmode, K, sb));
    if (bad) atomicAdd(out, bad);
}

// Scrubbers: run untimed before calls, so no call finds what an earlier one left on the chip.
// Shared memory: every byte of a block's largest dynamic allocation, one block per SM at a time.
// The system-reserved bytes at the start of every block's shared memory too (a kernel can address
// them through %reserved_smem_offset_begin/_end).
extern "C" __global__ void cudal2_scrub_shared(u64 key, int words) {
    extern __shared__ u64 s[];
    for (int i = threadIdx.x; i < words; i += blockDim.x) s[i] = mix(key ^ ((u64)blockIdx.x << 32) ^ (u64)i);
    unsigned rb, re;
    asm volatile("mov.u32 %0, %%reserved_smem_offset_begin;" : "=r"(rb));
    asm volatile("mov.u32 %0, %%reserved_smem_offset_end;" : "=r"(re));
    __syncthreads();   // nothing of the system's use of those bytes is live in this kernel
    for (unsigned a = rb + 4 * threadIdx.x; a + 4 <= re; a += 4 * blockDim.x)
        asm volatile("st.shared.u32 [%0], %1;" :: "r"(a), "r"((unsigned)mix(key ^ a)) : "memory");
    __syncthreads();
}
// Local memory: a frame of LOCAL_WORDS words per thread at full occupancy (2048 threads per SM),
// written through volatile stores so it stays in local memory; then, through raw local
// addresses, every word from the frame's end to the top of the local window (LOCAL_TOP). A
// kernel can address any word of its window with an integer (st.local [r]), not only its own
// frame, and on the H100 the window reaches 576 bytes above a 4 KiB frame: without this, a word
// written there survived the scrub (eval/local_window_probe.py). Below the frame the window
// ends (a store there faults) unless a kernel with a larger frame widened it.
extern "C" __global__ void __launch_bounds__(1024, 2) cudal2_scrub_local(u64 key, unsigned* sink) {
    volatile unsigned frame[LOCAL_WORDS];
    const u64 t = ((u64)blockIdx.x << 10) | threadIdx.x;
    for (int i = 0; i < LOCAL_WORDS; ++i) frame[i] = (unsigned)mix(key ^ (t << 20) ^ (u64)i);
    unsigned long long base;
    asm volatile("cvta.to.local.u64 %0, %1;" : "=l"(base) : "l"((unsigned long long)(&frame[0])));
    for (unsigned a = (unsigned)base + 4 * LOCAL_WORDS; a < LOCAL_TOP; a += 4)
        asm volatile("st.local.u32 [%0], %1;" :: "r"(a), "r"((unsigned)mix(key ^ (t << 24) ^ a)) : "memory");
    if (frame[(unsigned)t % LOCAL_WORDS] == 0x9E3779B9u && sink) sink[0] = 1u;  // keeps the frame live
}
extern "C" __global__ void __launch_bounds__(1024, 2) cudal2_scrub_regs(u64 key, unsigned* sink) {
    const u64 t = ((u64)blockIdx.x << 10) | threadIdx.x;
    wash_predicates(key, t, sink);   // (first: the register wash then rewrites what it used)
    wash_registers(key, t, sink);
}
extern "C" __global__ void __launch_bounds__(1024, 1) cudal2_scrub_regs_wide(u64 key, unsigned* sink) {
    wash_registers<WIDE_WORDS>(key, ((u64)blockIdx.x << 10) | threadIdx.x, sink);
}
// Uniform registers: no code ptxas emits writes them unless a value feeds the uniform datapath, so
// UR_WORDS independent 64-bit hashes of the key each become a shared-memory offset, all in one
// straight-line block before any branch: ptxas computes them in UR4..UR61 (with the carries of the
// 64-bit adds in UP0..UP6), every uniform register and predicate it ever allots (UR0..UR3 and UR62
// appear in no cubin it emits, so no kernel it builds reads them either). Fragile by nature: a loop
// or a select on the hashes sends them back to vector registers (tests/test_scrub_regs.py reads the
// SASS). Indexed as an array, not through a generic pointer, so no window base is formed.
__device__ __forceinline__ unsigned hash32(unsigned x) {
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16; return x;
}
extern "C" __global__ void __launch_bounds__(1024, 2) cudal2_scrub_uniform(u64 key, unsigned* sink) {
    __shared__ unsigned s[1024];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    unsigned acc = 0;
    const unsigned lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < UR_WORDS; ++i) {
        u64 z = key + (u64)i * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 31)) + (z << 7) + 0x632BE59BD9B4E019ull;
        acc += s[lane + (hash32((unsigned)z ^ (unsigned)(z >> 32)) & 0xff)];
    }
    if (acc == 0x9E3779B9u && sink) sink[0] = acc;
}
"""
LOCAL_BYTES = 4096  # the local frame scrubbed per thread; a kernel under test may use at most this
MODES = {"normal": 0, "uniform": 1, "positive": 2, "signed": 3,   # 4-9: `fill` only (see gen), never a Guard's
         "act_outlier": 4, "weight": 5, "act_split": 6, "act": 7, "weight_outlier": 8, "weight_split": 9}
SIGN_BLOCK = 128  # 'signed' flips sign every this many columns (k), or every K/2 for small K
_MASK = 2**64 - 1

LOCAL_TOP = 1 << 24  # where the local window ends on sm_90 (the probe: frames sit just below it)
REG_WORDS = 30  # values the register scrub holds live at once (R0..R29: see cudal2_scrub_regs)
WIDE_WORDS = 60  # the same at 64 registers a thread (R0..R61: cudal2_scrub_regs_wide)
UR_WORDS = 40   # uniform hashes of the uniform scrub (UR4..UR61 and UP0..UP6: see cudal2_scrub_uniform)
_OPTIONS = ("-std=c++17", f"-DLOCAL_WORDS={LOCAL_BYTES // 4}", f"-DLOCAL_TOP={LOCAL_TOP}u", f"-DREG_WORDS={REG_WORDS}",
            f"-DWIDE_WORDS={WIDE_WORDS}", f"-DUR_WORDS={UR_WORDS}")
def _fn(name: str):
    """A kernel of this module's source (compiled and looked up once: `rawkernels`)."""
    return rawkernels.function(_SRC, name, _OPTIONS)


def _guard_mode(dist: str) -> int:
    """A Guard's mode: 0-3 only. Modes 4-9 take their key as a seed (the scale, the outlier columns
    and the split from it, none from the call): under a Guard's set keys every timed call would get
    one outlier pattern and scale, and a split whose halves need not pair (review 74)."""
    if MODES[dist] >= 4:
        raise ValueError(f"guards: mode {dist!r} is for fill() only")
    return MODES[dist]


def new_key() -> np.uint64:
    return np.uint64(secrets.randbits(64))


def sign_block(K: int) -> int:
    """Runs of one sign: 128 columns, or half of a small K (a multiple of 8), so the dot product cancels."""
    return max(8, min(SIGN_BLOCK, K // 2 // 8 * 8))


def _ptrs(arrays) -> cp.ndarray:
    return cp.asarray(np.array([a if isinstance(a, int) else a.data.ptr for a in arrays], dtype=np.uint64))


def fill(x: cp.ndarray, seed: int, dist: str) -> None:
    """`x` (last dimension K) from the generator in `dist` (a key of MODES) under `seed`: the values
    `spot` recomputes for an operand it does not read."""
    K = x.shape[-1]
    _fn("cudal2_fill")((min(4096, max(1, math.ceil(x.size / 256))),), (256,),
                       (x, np.int64(x.size), np.uint64(seed & _MASK), np.int32(MODES[dist]), np.int32(K),
                        np.int32(sign_block(K))))


def _mix(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def prf(key: int, m: int) -> int:
    """The device's `prf` (SipHash-1-3 of one word under (key, mix(key))), on the host."""
    k1 = _mix(key)
    v = [key ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, key ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rnd():
        v[0] = (v[0] + v[1]) & _MASK; v[1] = _rotl(v[1], 13) ^ v[0]; v[0] = _rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & _MASK; v[3] = _rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & _MASK; v[3] = _rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & _MASK; v[1] = _rotl(v[1], 17) ^ v[2]; v[2] = _rotl(v[2], 32)

    for word in (m & _MASK, 8 << 56):
        v[3] ^= word
        rnd()
        v[0] ^= word
    v[2] ^= 0xFF
    for _ in range(3):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


@dataclass
class Failure:
    check: int
    set: int
    row: int
    col: int
    got: float
    want: float


class Log:
    """A runner's spot-check counters on the device, and the host's half of their tag."""

    def __init__(self) -> None:
        self.buf = cp.zeros(16, dtype=cp.uint32)
        self.mac = secrets.randbits(64)
        self._tags = [0]   # _tags[n]: the tag after n clean checks (extended as checks are read)

    def open_check(self) -> None:
        """Enqueue on the current stream, just before a check: its failure and block counters
        zeroed, so nothing a call left there (a preset count that wraps to zero) reaches its tag."""
        cp.cuda.runtime.memsetAsync(self.buf.data.ptr + 4, 0, 8, cp.cuda.get_current_stream().ptr)

    def read(self, checks: int) -> tuple[int, Failure | None, bool]:
        """(failures, first failure, authentic) after `checks` checks were enqueued: authentic means
        the tag is the one that exactly `checks` checks with no failure produce under this log's key
        (false when a check failed, did not run, or the log was rewritten); the failure count and
        the first failure are for the report."""
        v = self.buf.get()
        first = None
        if v[3]:
            f32 = v[8:10].view(np.float32)
            first = Failure(int(v[4]), int(v[5]), int(v[6]), int(v[7]), float(f32[0]), float(f32[1]))
        while len(self._tags) <= checks:   # each tag is computed once, however often the log is read
            n = len(self._tags) - 1
            self._tags.append(prf(self.mac, self._tags[n] ^ (n << 32)))
        return int(v[3]), first, self._tags[checks] == (int(v[11]) << 32 | int(v[10]))


class Guard:
    """One runner's prep and spot over its sets. `C` are its outputs; `K` the inner dimension.
    Timing (`X` given): `X` is the operand regenerated before each call (A when regen = 1, B or
    its stored transpose when regen = 2), drawn in mode `xmodes()` of each prep; `F` is the other
    operand, filled with `fill(..., fmode)` from `fixed`, one seed per set. `ws` the workspaces to
    randomize (pointers, with `ws_bytes` each). `inputs_changed` compares both operands of every
    set with what the generator gave them."""

    def __init__(self, C: list[cp.ndarray], K: int, X: list[cp.ndarray] | None = None, transposed: bool = False,
                 regen: int = 0, fixed: list[int] | None = None, fmode: str = "signed",
                 xmodes=None, ws: list[int] | None = None, ws_bytes: int = 0, F: list[cp.ndarray] | None = None):
        self.n, self.K, self.M, self.N = len(C), K, C[0].shape[0], C[0].shape[1]
        self.c_elems = C[0].size
        self.C = _ptrs(C)
        self.X = _ptrs(X) if X else None
        self.F = _ptrs(F) if F else None
        self.frows = F[0].size // K if F else 0
        self.spots = 0                                        # checks enqueued (each one's number, from here)
        # Per set, on the device (written by prep's fills, read by inputs_changed: no copy either way):
        self.set_calls = cp.zeros(self.n, dtype=cp.uint32)   # the call its X was drawn at...
        self.set_xmodes = cp.zeros(self.n, dtype=cp.int32)   # ...and in which mode
        self.rows = X[0].size // K if X else 0
        self.transposed, self.regen = int(transposed), regen
        self.fixed = cp.asarray(np.array(fixed or [0] * self.n, dtype=np.uint64))
        self.fmode = _guard_mode(fmode)
        self.xmodes = xmodes or (lambda: "normal")
        self.xmode = MODES["normal"]
        self.ws = _ptrs(ws) if ws and ws_bytes else None
        self.ws_bytes = ws_bytes if self.ws is not None else 0
        self.key = new_key()
        self.log = Log()

    def prep(self, first: int = 0, count: int | None = None, regen_x: bool = True) -> None:
        """Enqueue on the current stream: sets [first, first + count) made fresh (with `regen_x`
        false, C and the workspaces only: the calls then see the inputs the last ones saw, and
        `spot` must not run until the next full prep)."""
        count = self.n - first if count is None else count
        if regen_x:
            self.xmode = _guard_mode(self.xmodes())
            self.set_calls[first:first + count] = self.spots
            self.set_xmodes[first:first + count] = self.xmode
        X = self.X if self.X is not None and regen_x else None
        work = max(self.rows * self.K // 8, self.ws_bytes // 8, self.c_elems, 1)
        blocks = int(min(512, max(1, math.ceil(work / 256))))
        _fn("cudal2_prep")(
            (blocks, count), (256,),
            (X if X is not None else np.uint64(0), np.int64(self.rows), np.int32(self.K),
             np.int32(self.transposed), np.int32(self.xmode), np.int32(sign_block(self.K)),
             self.ws if self.ws is not None else np.uint64(0), np.int64(self.ws_bytes),
             self.C, np.int64(self.c_elems), np.float32(math.sqrt(self.K)), np.uint32(self.spots), self.key,
             np.int32(first)))

    def spot(self, first: int = 0, count: int | None = None) -> None:
        """Enqueue on the current stream: one check of sets [first, first + count)."""
        count = self.n - first if count is None else count
        self.log.open_check()
        _fn("cudal2_spot")(
            (count, SAMPLES), (256,),
            (self.C, np.int32(self.M), np.int32(self.N), np.int32(self.K), np.int32(self.regen), np.int32(self.xmode),
             np.int32(self.fmode), np.int32(sign_block(self.K)), self.fixed, self.log.buf, self.key,
             np.uint64(self.log.mac), np.int32(first), new_key(), np.uint32(self.spots)))
        self.spots += 1

    def inputs_changed(self) -> int:
        """How many elements of the sets' operands, fixed and regenerated, differ from what the
        generator gave them (regenerated now; reads the count back). Timing only, regenerated
        operand not transposed."""
        out = cp.zeros(1, dtype=cp.uint64)
        work = max(self.rows, self.frows) * self.K
        _fn("cudal2_inputs_check")(
            (int(min(256, max(1, math.ceil(work / 256)))), self.n), (256,),
            (self.X, np.int64(self.rows), self.F, np.int64(self.frows), np.int32(self.K),
             self.set_xmodes, np.int32(self.fmode), np.int32(sign_block(self.K)),
             self.set_calls, self.fixed, self.key, out))
        return int(out.get()[0])


class Scrubber:
    """Overwrites, untimed, what a kernel could leave on the chip for a later call to find: the
    shared memory of every SM (at the largest carve-out), a LOCAL_BYTES local frame of every
    thread slot and the window above it, the register file (R0..R29, P0..P6 at 32 registers a
    thread, after R0..R61 at 64: `cudal2_scrub_regs_wide`) and the uniform
    registers ptxas allots (UR4..UR61, UP0..UP6: `cudal2_scrub_uniform`).
    Not all written: R30/R31 of a 32-register allotment (the wide pass halved what a probe found
    there, see WASH_SRC); not written: UR0..UR3 and UR62, which no code ptxas
    emits writes or reads; a kernel can read a register it never wrote through wgmma with a run-time
    scale-d, as every sm90raw point does on its first k-step, yet on the H100 none of 9.7
    million marker words read that way survived a scrub (eval/register_probe.py). Not covered:
    a window widened below the frame by a kernel with a larger one (none in a judge's process:
    tests/test_gpu_scrub.py), the L1/texture caches (not addressable, and emptied by the
    scrubbers' own traffic) and the L2 (flushed separately)."""

    def __init__(self) -> None:
        dev = cp.cuda.Device()
        self.sms = dev.attributes["MultiProcessorCount"]
        self.smem = dev.attributes["MaxSharedMemoryPerBlockOptin"]
        # A RawKernel (same source and options: cupy's compile cache serves both) because only it
        # can raise the dynamic shared-memory limit and the carve-out.
        self.shared = cp.RawKernel(_SRC, "cudal2_scrub_shared", options=_OPTIONS)
        self.shared.max_dynamic_shared_size_bytes = self.smem
        self.shared.preferred_shared_memory_carveout = 100
        self.local, self.regs = _fn("cudal2_scrub_local"), _fn("cudal2_scrub_regs")
        self.wide = _fn("cudal2_scrub_regs_wide")
        self.uniform = _fn("cudal2_scrub_uniform")

    def __call__(self) -> None:
        key = new_key()
        grid = (4 * self.sms,)
        self.shared(grid, (1024,), (key, np.int32(self.smem // 8)), shared_mem=self.smem)
        # One full wave each: two 1024-thread blocks per SM hold every thread slot (and so every
        # local-memory slot and the whole register file) once; more waves only repeat the writes.
        self.local((2 * self.sms,), (1024,), (key, np.uint64(0)))
        self.scrub_regs(key)

    def scrub_regs(self, key: np.uint64) -> None:
        # uniform first: its own vector registers are then rewritten by the register scrubs; the
        # wide one (64 a thread) before the narrow, whose R30/R31 it may reach (see WASH_SRC)
        self.uniform((2 * self.sms,), (1024,), (new_key(), np.uint64(0)))
        self.wide((self.sms,), (1024,), (new_key(), np.uint64(0)))
        self.regs((2 * self.sms,), (1024,), (key, np.uint64(0)))


_scrubber: Scrubber | None = None


def _the_scrubber() -> Scrubber:
    global _scrubber
    if _scrubber is None:
        _scrubber = Scrubber()
    return _scrubber


def scrub() -> None:
    """Enqueue the scrubbers on the current stream (one `Scrubber` per process)."""
    _the_scrubber()()


def scrub_regs() -> None:
    """Enqueue the register scrubs alone (uniform, then vector): the last harness kernels before a
    call or replay (the end of `timing.flush_l2` and of `Snapshots.arm`), because the harness's own
    kernels that run after `scrub` leave their addresses in the register file (the flush buffer's,
    the hold flag's, a snapshot row's; their parameters in uniform registers), where a kernel reads
    them through registers it never wrote (review 26)."""
    _the_scrubber().scrub_regs(new_key())
