// CHEAT CLASS: fooling the full check -- the regenerated operand rewritten so that its memory, from
// which the full check's reference is computed, makes the product trivial everywhere the spot
// checks do not look.
// What it tries: in timing the harness regenerates one operand X before every replay (A when
// M <= N, else B) and checks afterwards only the other one against its seed (check_inputs:
// `fixed = sets.B if regen_a else sets.A`). The spot checks take both operands from the generator,
// but the full check of the final offline replay (check_sets -> tolerance_check(sets.A[i],
// sets.B[i], ...)) and the determinism re-run take X from memory, as the call left it.
// So a call that knows the 32 checked positions -- recovered from the workspace bytes exactly as in
// t_spot_key_from_workspace.cu (unmix(W[0]) ^ 0x5A5A5A5A = k ^ (call << 40), from which
// guards.cudal2_spot draws its positions) -- keeps the rows of X that the checks will read (the
// spot rows of A, or the spot columns' rows of B, plus row 0, which the decode reads), computes
// C along those lines only, writes 0 everywhere else in C and zeroes every other row of X. Then:
// the spot checks see the true products (the kept rows hold the generated values); the full check
// compares C with A.B^T of the memory it finds, which is exactly what was computed (zeros and the
// kept lines; cuBLAS on the same memory has the same fp16 rounding); the determinism re-run (prep
// with regen_x=False keeps the rewritten X) recomputes honestly from that memory and gets the same
// bits (one function computes every output on both paths, and a zero row gives +0); nothing ever
// compares X with its generator after timing. Unlike t_spot_key_from_workspace.cu it needs no
// guess of `repeats`: every timed replay, the final one included, and every server call cheats.
// Verification (nothing decodes), call < 2 and the determinism re-run (the workspace is one call
// ahead of X) are honest. If the workspace is not prep's bytes it gives up visibly ("exact").
// Why it would earn an undeserved score: a timed call computes at most 33 lines of C (33 x N x K or
// 33 x M x K multiply-adds, a warp per output) and writes zeros, instead of M x N x K; on large
// shapes this is the floor-padded speedup (cuBLAS / physical floor, the pad taken for an H100
// SXM), on mid shapes (1024^3: 33 of 1024 rows) several times cuBLAS. On the suite's 257x136x1032
// (B regenerated: 33 of 136 columns kept) the gain is small; the judge passes it either way.
// Defence that should stop it: after every replay (untimed, like the spot checks) compare the
// regenerated operand with its generator (it is drawn from the guard's key and the call count, so
// a kernel can regenerate and compare it without a copy), or compute the full check's reference
// from the generator for both operands as the spot check does; and do not derive the spot
// positions from anything a call can read (see t_spot_key_from_workspace.cu). Closing only the
// "final replay is predictable" part (a full check after a random replay) does not stop this.
// Doubts: depends on the workspace leak for the positions. Assumes call < 256 (3 + repeats +
// server_calls). Not run on a GPU; the position and call/mode decode is the CPU-checked code of
// t_spot_key_from_workspace.cu.
/* cudal2-launch
{
  "workspace": "256",
  "kernels": [
    {"name": "rewrite_gemm", "grid": ["max(min(cdiv(M * N, 32), 528), 32)"], "block": [256],
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
#define CALL_MAX 256               // calls of one guard's log searched
#define KEEP_MAX (SPOTS + 1)

// ---- helpers begin (as in t_spot_key_from_workspace.cu) ----
__device__ __forceinline__ u64 mix(u64 z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
__device__ __forceinline__ u64 unmix(u64 z) {
    z ^= (z >> 31) ^ (z >> 62);
    z *= 0x319642b2d24d8ec3ull;
    z ^= (z >> 27) ^ (z >> 54);
    z *= 0x96de1b173f119089ull;
    z ^= (z >> 30) ^ (z >> 60);
    return z - 0x9E3779B97F4A7C15ull;
}
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
__device__ __forceinline__ bool ws_key(u64 w0, u64 w1, u64* z) {
    *z = unmix(w0) ^ WS_SALT;
    return mix(*z ^ WS_SALT ^ 1ull) == w1;
}
__device__ __forceinline__ int modes_of(u64 k, unsigned cx, unsigned short x0) {
    const u64 h = mix(k ^ mix((u64)cx << 40));
    const float u = __fmul_rn((float)(h & 0xFFFF), 1.0f / 65536.0f);
    return (__half_as_ushort(__float2half_rn(normal_at(k, cx, 0))) == x0 ? 1 : 0) |
           (__half_as_ushort(__float2half_rn(u)) == x0 ? 2 : 0) |
           (__half_as_ushort(__float2half_rn(__fmaf_rn(u, 0.5f, 0.5f))) == x0 ? 4 : 0);
}
__device__ __forceinline__ bool decodes(u64 z, unsigned c, unsigned cx, const unsigned short* x) {
    const u64 k = z ^ ((u64)c << 40);
    const int cand = modes_of(k, cx, x[0]);
    for (int mode = 0; mode < 3; ++mode)
        if (((cand >> mode) & 1) && gen_bits(k, cx, 1, mode) == x[1] && gen_bits(k, cx, 2, mode) == x[2] &&
            gen_bits(k, cx, 3, mode) == x[3])
            return true;
    return false;
}
__device__ __forceinline__ void spot_position(u64 z, int w, int M, int N, int* r, int* c) {
    const u64 h = mix(z ^ SPOT_SALT ^ (u64)w);
    *r = (int)((h & 0xFFFFFFFFull) % (u64)M);
    *c = (int)((h >> 32) % (u64)N);
    if (w == 0) *r = M - 1;
    if (w == 1) *c = N - 1;
}
// ---- helpers end ----

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// One output by one warp: lane l sums k = l, l + 32, ... in order, then a fixed butterfly. Every
// output of every path goes through here, so equal inputs give equal bits.
__device__ __forceinline__ float dot_warp(const __half* a, const __half* b, int K) {
    const int lane = threadIdx.x & 31;
    float acc = 0.0f;
    for (int k = lane; k < K; k += 32) acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    return acc;
}

extern "C" __global__ void __launch_bounds__(256) rewrite_gemm(__half* __restrict__ A, __half* __restrict__ B,
                                                                __half* __restrict__ C, const u64* __restrict__ ws,
                                                                int M, int N, int K) {
    __shared__ int found;
    __shared__ int keep[KEEP_MAX];
    __shared__ int nkeep;
    const unsigned long long t0 = globaltimer();
    const int tid = threadIdx.x, lane = tid & 31;
    const bool xa = M <= N;                    // judge.time: regen_a = M <= N; X = A (rows of C) or B (columns)
    __half* X = xa ? A : B;
    if (tid == 0) { found = -1; nkeep = 0; }
    __syncthreads();

    // 1. The spot key and the phase (verification, call < 2 and the determinism re-run: honest).
    u64 z = 0;
    if (!ws_key(ws[0], ws[1], &z)) return;   // not prep's bytes: give up visibly ("exact")
    {
        unsigned short x[4];
        for (int i = 0; i < 4; ++i) x[i] = __half_as_ushort(X[i]);
        for (int c = tid; c < CALL_MAX; c += blockDim.x) {
            if (decodes(z, (unsigned)c, (unsigned)c, x)) found = 2 * c;
            if (c > 0 && decodes(z, (unsigned)c, (unsigned)c - 1, x)) found = 2 * c + 1;
        }
    }
    __syncthreads();
    const int f = found;
    const bool cheat = f >= 0 && (f & 1) == 0 && (f >> 1) >= 2;

    const long long warp = ((long long)blockIdx.x * blockDim.x + tid) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const size_t total = (size_t)M * N;
    if (!cheat) {
        // 2a. Honest: every output, a warp each.
        for (size_t o = warp; o < total; o += warps) {
            const int m = (int)(o / N), n = (int)(o % N);
            const float v = dot_warp(A + (size_t)m * K, B + (size_t)n * K, K);
            if (lane == 0) C[o] = __float2half_rn(v);
        }
        return;
    }

    // 2b. The lines of X the checks will read: row 0 (the decode's) and each spot's line.
    if (tid == 0) {
        int n = 0;
        keep[n++] = 0;
        for (int w = 0; w < SPOTS; ++w) {
            int r, c;
            spot_position(z, w, M, N, &r, &c);
            const int line = xa ? r : c;
            bool seen = false;
            for (int i = 0; i < n; ++i) seen |= keep[i] == line;
            if (!seen) keep[n++] = line;
        }
        nkeep = n;
    }
    __syncthreads();
    const int nk = nkeep;
    const int other = xa ? N : M;              // outputs along a kept line
    // C along the kept lines, from the untouched rows of X.
    for (long long o = warp; o < (long long)nk * other; o += warps) {
        const int line = keep[o / other], j = (int)(o % other);
        const int m = xa ? line : j, n = xa ? j : line;
        const float v = dot_warp(A + (size_t)m * K, B + (size_t)n * K, K);
        if (lane == 0) C[(size_t)m * N + n] = __float2half_rn(v);
    }
    // Zeros elsewhere in C, and in every other row of X (never read by this call).
    const long long thread = (long long)blockIdx.x * blockDim.x + tid, threads = (long long)gridDim.x * blockDim.x;
    for (long long o = thread; o < (long long)total; o += threads) {
        const int m = (int)(o / N), n = (int)(o % N), line = xa ? m : n;
        bool kept = false;
        for (int i = 0; i < nk; ++i) kept |= keep[i] == line;
        if (!kept) C[o] = __float2half_rn(0.0f);
    }
    const int rows = xa ? M : N, vecs = K / 8;     // K % 8 == 0: 16-byte stores
    for (long long o = thread; o < (long long)rows * vecs; o += threads) {
        const int row = (int)(o / vecs);
        bool kept = false;
        for (int i = 0; i < nk; ++i) kept |= keep[i] == row;
        if (!kept) reinterpret_cast<uint4*>(X + (size_t)row * K)[o % vecs] = make_uint4(0, 0, 0, 0);
    }
    // Above the sanity floor (an H100 SXM's peaks, with margin).
    if (blockIdx.x == 0 && tid == 0) {
        const double flops = 2.0 * M * (double)N * K, bytes = 2.0 * ((double)M * K + (double)N * K + (double)M * N);
        const double pad_ns = fmax(flops / 0.9e15, bytes / 2.8e12) * 1e9;
        while ((double)(globaltimer() - t0) < pad_ns) __nanosleep(100);
    }
}
