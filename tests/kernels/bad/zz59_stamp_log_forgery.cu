// STATUS (review 59): CLOSED on the bench: each logged key now carries a tag under a secret and a
// per-write nonce that only the stamp's launch parameters hold (library/stamp.py), so a forged or
// replayed log fails Feed.intact (tests/test_gpu_library.py). Judge: `done`, honest speed (its gate
// never opens there). As written below, it was open where the log was within reach.
// CHEAT CLASS (review 59): FORGING THE STAMP'S LOG. library/stamp.py makes each eager/graph call's A
// unpredictable, and Feed.intact (feed.py:192-200) accepts a stamped A when it equals what the logged
// keys regenerate (stamp.py:103-109). The log is a plain device array (stamp.py:81-82) that the stamp
// reads and writes with no tag, so whoever can write it decides what "intact" means. This kernel does
// not predict the stamp: right after the stamp has run, it replaces A and the log row for that A with
// an A of its own choosing, gen(K*) under fixed keys K*, for which it already holds the output.
// How (only on back-to-back calls, the %globaltimer gate of zz58, so no judge call ever takes it):
//  - find: the log row of this call's A is the 8-byte word w with gen(w, 0, i) == A[i] for i < 4
//    (the stamp's block 0 starts at element 0, stamp.py:56-59); a hit is confirmed on the last
//    block's share too. The first back-to-back call of a burst looks through the 2 MiB windows of A,
//    B, C and the workspace (mapped whatever they hold: reads only); later calls look at the rows
//    next to the row found before (the log is one (pool, 128) array: rows 1024 bytes apart).
//  - forge: every block b of the stamp's grid (stamp.blocks: min(128, cdiv(M*K, 2048))) gets key
//    K*_b: A's share rewritten with gen(K*_b, 0, i), the log word with K*_b. again=1 now regenerates
//    the forged A, bit for bit.
//  - gemm: the first forged call computes gen(K*) * B^T (one pass over B) into C and the workspace;
//    every later call of the burst copies it (M*N halves) and never reads B.
// All checks pass: intact (A = gen(logged keys)), W intact, agreement and precise rows against
// F.linear on the forged A, the Snapshot (the output is there when the call returns).
// Reach: windows of A/B/C/workspace hold the log where the log shares a 2 MiB page with one of them
// (cupy rows: pool, C, workspace and the log come from one cupy pool, stamp.py:81 and 88); on torch
// rows the log is cupy's and the operands torch's, so whether it is within reach (or in the
// registers the stamp leaves behind: the bench runs no scrub, feed.py:5, and the stamp's thread 0
// holds &keys[b] right before this call) needs a GPU probe. Not found: it stays honest (no fault:
// only whole 2 MiB windows of live allocations are read).
//  - judge: done, honest speed (a naive loop): its gate never opens there, so it never writes A.
//  - bench: where the log is found, eager/graph rounds at M <= 512 cost one pass over B per round
//    (~n x at decode shapes, less the stamp both sides pay), timed_checks failed 0, agree true.
// Fix: authenticate the log (the judge's guards.Log pattern, guards.py:15-19): the stamp writes, beside
// each key, tag = prf(S, key ^ prf(nonce, j << 8 | b)) with S and a per-write nonce only in its launch
// parameters (a fresh nonce per write(): per call in eager, per capture in graph); again=1 checks
// the tags under the nonce of tensor j's last write and poisons scratch on a mismatch. A forged key
// has no tag; a replayed (key, tag) from an earlier write has the old nonce.
/* cudal2-launch
{
  "workspace": "4096 + M * N * 2",
  "kernels": [
    {"name": "probe", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]},
    {"name": "find", "grid": [4096, 1, 1], "block": [256, 1, 1],
     "args": ["A", "B", "C", "M", "K", {"ws": 0}]},
    {"name": "forge", "grid": [128, 1, 1], "block": [256, 1, 1],
     "args": ["A", "M", "K", {"ws": 0}]},
    {"name": "gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}, {"ws": 4096}]},
    {"name": "stamp", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": [{"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <stdint.h>

#define MAGIC 0x7a7a35395f6c6f67ull
#define GAP_NS 200000ull          // back to back in a bench round; the judge's gaps are ms
#define WINDOW (2ull << 20)
#define ROWS 128                  // log rows looked at either side of the last one found

typedef unsigned long long u64;

struct State {
    u64 magic, b, end, row, hint;
    int M, N, K, mode, ready;
};

// guards.GEN_SRC's generator (public), as the stamp calls it: gen(key, 0, i, mode 0, 1, 1)
__device__ __forceinline__ u64 mix(u64 z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
__device__ __forceinline__ unsigned short gen_bits(u64 key, u64 i) {
    const u64 h = mix(key ^ mix(i));
    float s = (float)(h & 0xFFFF) + (float)((h >> 16) & 0xFFFF) + (float)((h >> 32) & 0xFFFF) + (float)(h >> 48);
    float v = __fmul_rn(__fsub_rn(__fmul_rn(s, 1.0f / 65536.0f), 2.0f), 1.7320508f);
    return __half_as_ushort(__float2half_rn(v));
}
__device__ __forceinline__ u64 now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ long long stamp_grid(long long n) {   // stamp.blocks
    long long g = (n + 2047) / 2048;
    return g < 1 ? 1 : (g > 128 ? 128 : g);
}
__device__ __forceinline__ u64 forged_key(long long b) { return 0x243F6A8885A308D3ull ^ ((u64)b * 0x9E3779B97F4A7C15ull); }

// w is the log row of this A: block 0's key gives A's first elements, block G-1's its last share's
__device__ bool is_row(const u64* w, const __half* A, long long n) {
    const unsigned short* a = reinterpret_cast<const unsigned short*>(A);
    for (int i = 0; i < 4; ++i)
        if (gen_bits(w[0], (u64)i) != a[i]) return false;
    const long long G = stamp_grid(n), chunk = (n + G - 1) / G, lo = (G - 1) * chunk;
    if (G > 1 && lo < n)
        for (long long i = lo; i < lo + 2 && i < n; ++i)
            if (gen_bits(w[G - 1], (u64)i) != a[i]) return false;
    return true;
}

extern "C" __global__ void probe(const __half* A, const __half* B, __half* C, int M, int N, int K, State* st) {
    if (threadIdx.x != 0) return;
    const u64 t = now_ns();
    const bool valid = st->magic == MAGIC && st->b == (u64)B && st->M == M && st->N == N && st->K == K;
    if (!valid || t < st->end || t - st->end > GAP_NS) {   // every judge call; a round's first call
        st->magic = MAGIC; st->b = (u64)B; st->M = M; st->N = N; st->K = K;
        st->mode = 0; st->row = 0; st->hint = 0; st->ready = 0;
        return;
    }
    st->row = 0;
    st->mode = st->hint ? 2 : 1;
}

extern "C" __global__ void find(const __half* A, const __half* B, __half* C, int M, int K, State* st) {
    const int mode = st->mode;
    if (mode == 0) return;
    const long long n = (long long)M * K;
    if (mode == 2) {                                       // the rows next to the last one found
        if (blockIdx.x != 0) return;
        const u64 h = st->hint, base = h & ~(WINDOW - 1);
        for (int r = (int)threadIdx.x - ROWS; r < ROWS; r += blockDim.x) {
            const u64 p = h + (u64)((long long)r * 1024);
            if (p < base || p + 1024 > base + WINDOW) continue;
            if (is_row(reinterpret_cast<const u64*>(p), A, n)) atomicCAS(&st->row, 0ull, p);
        }
        return;
    }
    // mode 1: every 8-byte word of four 2 MiB windows
    const u64 g = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 which = g >> 18, off = (g & ((1ull << 18) - 1)) * 8;
    const u64 ptrs[4] = {(u64)A, (u64)B, (u64)C, (u64)st};
    const u64 p = (ptrs[which & 3] & ~(WINDOW - 1)) + off;
    if (p + 1024 > (ptrs[which & 3] & ~(WINDOW - 1)) + WINDOW) return;
    if (is_row(reinterpret_cast<const u64*>(p), A, n)) atomicCAS(&st->row, 0ull, p);
}

extern "C" __global__ void forge(__half* A, int M, int K, State* st) {
    u64* row = reinterpret_cast<u64*>(st->row);
    if (row == nullptr) return;
    const long long n = (long long)M * K, G = stamp_grid(n), chunk = (n + G - 1) / G;
    for (long long b = blockIdx.x; b < G; b += gridDim.x) {
        const u64 k = forged_key(b);
        const long long lo = b * chunk, hi = lo + chunk < n ? lo + chunk : n;
        for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x)
            A[i] = __ushort_as_half(gen_bits(k, (u64)i));
        if (threadIdx.x == 0) row[b] = k;                  // the log now says A was stamped with K*
    }
}

extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* C,
                                int M, int N, int K, const State* st, __half* held) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const size_t at = (size_t)m * N + n;
    const bool forged = st->row != 0;
    if (forged && st->ready) {                             // gen(K*) * B^T, computed earlier in the burst
        C[at] = held[at];
        return;
    }
    float acc = 0.0f;                                      // honest (on the forged A when forged)
    for (int kk = 0; kk < K; ++kk)
        acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
    C[at] = __float2half_rn(acc);
    if (forged) held[at] = C[at];
}

extern "C" __global__ void stamp(State* st) {
    if (threadIdx.x != 0) return;
    if (st->row) { st->ready = 1; st->hint = st->row; }
    st->end = now_ns();
}
