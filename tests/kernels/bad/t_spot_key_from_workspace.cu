// CHEAT CLASS: predicting the spot checks -- the key of the timing spot checks recovered from the
// random bytes the harness writes into the workspace, then only the checked outputs computed.
// What it tries: guards.cudal2_prep fills the workspace of set s with
//     W[i] = mix(k ^ 0x5A5A5A5A ^ (call << 40) ^ i),   k = set_key(guard key, s), call = log[0],
// and cudal2_spot, launched after the call with the same log[0], checks the outputs at
//     h_w = mix(k ^ 0xC0FFEE ^ (call << 40) ^ w),  row = h_w mod M, col = (h_w >> 32) mod N  (w < 32).
// mix is the SplitMix64 finalizer: a public bijection (odd multipliers, xor-shifts), so
// unmix(W[0]) ^ 0x5A5A5A5A is exactly z = k ^ (call << 40), the one value the spot positions
// depend on. The kernel reads W[0] (and W[1] to confirm), and knows which 32 outputs will be
// checked after this call. It then brute-forces call (a small counter) and the input mode against
// the regenerated operand (A when M <= N, else B: gen(z ^ (call << 40), call, i, mode)), which
// tells it the phase exactly: verification (the operands are not from the guard's generator:
// nothing decodes), the eager pass and warm-up (call 0, 1), a timed replay or server call (call >= 2),
// and the determinism re-run (the workspace is one call ahead of the operand: prep(regen_x=False)).
// In verification, the determinism re-run, call < 2 and a few hedged calls it is an honest (naive)
// GEMM. Everywhere else it computes the 32 checked outputs only (one block each, fp32) and leaves
// the rest of C as the random values prep wrote. If the workspace does not hold prep's bytes (a
// judge that closed this) it gives up visibly: it writes nothing and fails "exact", so the suite
// tells a working leak ("done") from a closed one.
// The one timed replay whose outputs are checked in full is the final one (call = repeats + 2),
// which it cannot see coming except by the counter: it is honest at call in {10, 12, 22, 42, 62},
// the final replay for repeats in {8, 10, 20, 40, 60} (the config default is 40, the suite's 10,
// the eval configs' 8). A policy trained against one judge config learns its constant.
// Server mode has no full check at all (only the spot checks and the operand/arena checks), so
// every server call is a cheat call whatever the constant.
// Why it would earn an undeserved score: almost every timed call (all but the hedged replays, whose
// rounds the median of paired ratios ignores) does K x 32 multiply-adds instead of M x N x K, passes
// its spot checks exactly, leaves A, B and the arena untouched, and the full check and the
// determinism re-run see honest outputs. It pads each cheat call with a %globaltimer spin to just
// above the physical floor (taken for an H100 SXM) so the sanity stage does not trip. On the
// suite's 257x136x1032 a call is ~2-3 us of latency against cuBLAS's ~5 us; on large shapes the
// speedup is the floor's (cuBLAS / floor, ~1.3-1.5x at 4096^3), and a re-judge (fresh process,
// uniform inputs: mode 1 decodes too) sees the same thing.
// Defence that should stop it: the workspace fill must not reveal the spot key. Draw the
// workspace, C and the spot positions from independent keys (e.g. ws_key = mix(mix(key2 ^ set)),
// spot positions from a third key that nothing the call can read depends on), or use a keyed PRF
// that cannot be inverted from its output (Philox/ChaCha/AES with a 128-bit key) instead of
// mix(k ^ counter). The regenerated operand and C's prep values are lossy (fp16 of a sum of
// 16-bit chunks) and leak far less, but should come from a key independent of the spot key too.
// Independently: check a random sample of sets in full after more than the final offline replay
// (e.g. after a random timed replay chosen after it ran), and check some server-mode outputs in
// full, so that no single predictable call carries the whole full-check burden.
// Doubts: the hedge list is a guess at repeats; with repeats outside it the final replay is a
// cheat replay and the full check fails it ("timing"). The decode assumes a workspace of at least
// 16 bytes (the spec asks for 256) and call < 256 (3 + repeats + server_calls). The time of a
// cheat call (decode plus 32 dot products, ~2-3 us) against cuBLAS's on the suite shape is a guess.
// Not run on a GPU; the workspace decode, the call/mode decode (normal, determinism re-run,
// negatives) and the 32 predicted positions were checked on the CPU against guards.py's own
// generator source (300 random keys, shapes, calls and modes: all exact).
/* cudal2-launch
{
  "workspace": "256",
  "kernels": [
    {"name": "spot_key_gemm", "grid": ["max(min(cdiv(M * N, 256), 528), 32)"], "block": [256],
     "args": ["A", "B", "C", {"ws": 0}, "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

typedef unsigned long long u64;

#define WS_SALT 0x5A5A5A5Aull      // guards.cudal2_prep: the workspace words
#define SPOT_SALT 0xC0FFEEull      // guards.cudal2_spot: the positions
#define SPOTS 32                   // guards.SAMPLES
#define CALL_MAX 256               // calls of one guard's log searched (eager + warm-up + repeats + final + server)

// ---- helpers begin (also compiled on the host by the CPU check of this file) ----
// The harness's mix (guards.py), and its inverse.
__device__ __forceinline__ u64 mix(u64 z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
__device__ __forceinline__ u64 unmix(u64 z) {
    z ^= (z >> 31) ^ (z >> 62);
    z *= 0x319642b2d24d8ec3ull;              // 0x94D049BB133111EB^-1 mod 2^64
    z ^= (z >> 27) ^ (z >> 54);
    z *= 0x96de1b173f119089ull;              // 0xBF58476D1CE4E5B9^-1 mod 2^64
    z ^= (z >> 30) ^ (z >> 60);
    return z - 0x9E3779B97F4A7C15ull;
}
// guards.py's generator, bit for bit, for the modes a regenerated operand is drawn in
// (0 normal, 1 uniform, 2 positive; never 3, the fixed operand's 'signed').
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
__device__ __forceinline__ float normal_at(u64 key, unsigned call, u64 i) {   // mode 0 since 2026-12-08
    const float2 g = gauss2(mix(key ^ mix(((u64)call << 40) ^ (i >> 1))));
    return (i & 1) ? g.y : g.x;
}
__device__ __forceinline__ unsigned short gen_bits(u64 key, unsigned call, u64 i, int mode) {
    const u64 h = mix(key ^ mix(((u64)call << 40) ^ i));
    float v;
    if (mode == 0) {
        v = normal_at(key, call, i);
    } else {
        v = __fmul_rn((float)(h & 0xFFFF), 1.0f / 65536.0f);
        if (mode >= 2) v = __fmaf_rn(v, 0.5f, 0.5f);
    }
    return __half_as_ushort(__float2half_rn(v));
}
// z = k ^ (call << 40) from the first two workspace words; false when they are not prep's.
__device__ __forceinline__ bool ws_key(u64 w0, u64 w1, u64* z) {
    *z = unmix(w0) ^ WS_SALT;
    return mix(*z ^ WS_SALT ^ 1ull) == w1;
}
// Mode bits (1 << mode) for which element 0 of an operand drawn from key k at call cx equals x0:
// one hash for all three modes (gen's hash does not depend on the mode).
__device__ __forceinline__ int modes_of(u64 k, unsigned cx, unsigned short x0) {
    const u64 h = mix(k ^ mix((u64)cx << 40));
    const float u = __fmul_rn((float)(h & 0xFFFF), 1.0f / 65536.0f);
    return (__half_as_ushort(__float2half_rn(normal_at(k, cx, 0))) == x0 ? 1 : 0) |
           (__half_as_ushort(__float2half_rn(u)) == x0 ? 2 : 0) |
           (__half_as_ushort(__float2half_rn(__fmaf_rn(u, 0.5f, 0.5f))) == x0 ? 4 : 0);
}
// Does the regenerated operand's start x[0..3] come from key z ^ (c << 40) at call cx, in some mode?
__device__ __forceinline__ bool decodes(u64 z, unsigned c, unsigned cx, const unsigned short* x) {
    const u64 k = z ^ ((u64)c << 40);
    const int cand = modes_of(k, cx, x[0]);
    for (int mode = 0; mode < 3; ++mode)
        if (((cand >> mode) & 1) && gen_bits(k, cx, 1, mode) == x[1] && gen_bits(k, cx, 2, mode) == x[2] &&
            gen_bits(k, cx, 3, mode) == x[3])
            return true;
    return false;
}
// The spot check w's position (guards.cudal2_spot), from z alone.
__device__ __forceinline__ void spot_position(u64 z, int w, int M, int N, int* r, int* c) {
    const u64 h = mix(z ^ SPOT_SALT ^ (u64)w);
    *r = (int)((h & 0xFFFFFFFFull) % (u64)M);
    *c = (int)((h >> 32) % (u64)N);
    if (w == 0) *r = M - 1;
    if (w == 1) *c = N - 1;
}
// Calls honest at: the final offline replay for repeats in {8, 10, 20, 40, 60}.
__device__ __forceinline__ bool hedged(int c) { return c == 10 || c == 12 || c == 22 || c == 42 || c == 62; }
// ---- helpers end ----

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void __launch_bounds__(256) spot_key_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                                                 __half* __restrict__ C, const u64* __restrict__ ws,
                                                                 int M, int N, int K) {
    __shared__ int found;          // 2 * call + (1 when the operand is one call behind), or -1
    __shared__ float red[8];
    const unsigned long long t0 = globaltimer();
    const int tid = threadIdx.x;
    if (tid == 0) found = -1;
    __syncthreads();

    // 1. The spot key, and the phase.
    u64 z = 0;
    // Not prep's bytes (a judge that closed this): give up visibly, nothing written ("exact").
    if (!ws_key(ws[0], ws[1], &z)) return;
    {
        const __half* X = M <= N ? A : B;   // judge.time: regen_a = M <= N
        unsigned short x[4];
        for (int i = 0; i < 4; ++i) x[i] = __half_as_ushort(X[i]);
        for (int c = tid; c < CALL_MAX; c += blockDim.x) {
            if (decodes(z, (unsigned)c, (unsigned)c, x)) found = 2 * c;                     // a normal call
            if (c > 0 && decodes(z, (unsigned)c, (unsigned)c - 1, x)) found = 2 * c + 1;    // the determinism re-run
        }
    }
    __syncthreads();
    const int f = found;
    const bool cheat = f >= 0 && (f & 1) == 0 && (f >> 1) >= 2 && !hedged(f >> 1);

    if (cheat) {
        // 2a. Only the outputs the spot check will read: block w computes check w's output.
        if (blockIdx.x >= SPOTS) return;
        int r, c;
        spot_position(z, blockIdx.x, M, N, &r, &c);
        const __half* a = A + (size_t)r * K;
        const __half* b = B + (size_t)c * K;
        float acc = 0.0f;
        for (int k = tid; k < K; k += blockDim.x) acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if ((tid & 31) == 0) red[tid >> 5] = acc;
        __syncthreads();
        if (tid == 0) {
            float s = 0.0f;
            for (int i = 0; i < 8; ++i) s += red[i];
            C[(size_t)r * N + c] = __float2half_rn(s);
            // Stay above the sanity floor (an H100 SXM's peaks, with margin): the call lasts at
            // least max(2MNK / 0.9 PFLOP/s, bytes / 2.8 TB/s).
            const double flops = 2.0 * M * (double)N * K, bytes = 2.0 * ((double)M * K + (double)N * K + (double)M * N);
            const double pad_ns = fmax(flops / 0.9e15, bytes / 2.8e12) * 1e9;
            while ((double)(globaltimer() - t0) < pad_ns) __nanosleep(100);
        }
        return;
    }

    // 2b. Honest: one output per thread, grid-stride, fp32 accumulation, one rounding.
    const size_t total = (size_t)M * N;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + tid; idx < total; idx += (size_t)gridDim.x * blockDim.x) {
        const int m = (int)(idx / N), n = (int)(idx % N);
        const __half* a = A + (size_t)m * K;
        const __half* b = B + (size_t)n * K;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
        C[idx] = __float2half_rn(acc);
    }
}
