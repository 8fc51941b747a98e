// CHEAT CLASS: batching across calls -- a directory of every input set kept in the arena's own
// background, which the kernel can regenerate, so it restores it before anyone checks.
// What it tries: buffers.Arena fills every byte outside its buffers with w[i] = mix(seed ^ mix(i))
// (word i from the arena's start) and `damage` regenerates that to find writes outside buffers.
// mix is a public bijection, so two adjacent background words (the gap before A: at least
// guard_bytes of background) give the seed: for each 2 MiB-aligned candidate start b below A
// (the arena is its own cudaMalloc of whole 2 MiB pages), i = (A - 8 - b) / 8 and
// seed = unmix(w[i]) ^ mix(i); the right b is the one whose seed also predicts w[i - 1]. With the
// seed the kernel can write anywhere in the background and put back exactly what was there.
// The timing arena is checked only after the offline stage (after the determinism re-run) and
// after the server stage, so the background is a stash for the whole offline stage:
// - registration (eager pass): the calls of one pass run back to back with no scrub between them,
//   so each call finds in its SM's shared memory the marker the previous call's blocks left there
//   (with that call's A, B, C and workspace); a call that sees a marker writes a directory at the
//   arena's start (its first gap) and enters the previous call's set and its own. Server calls and
//   every verification call come right after a scrub (no marker): they never create anything;
// - batching (every replay): the first call of a replay finds its own set in the directory with
//   inputs that changed since (A or B regenerated): it computes C of every set in the directory in
//   one grid and stamps each other set's workspace (workspaces are refreshed only before a replay)
//   with a hash of its inputs; every later call of the replay finds its stamp and returns at once;
// - clean-up (the determinism re-run): the only replay whose inputs equal the last ones (prep with
//   regen_x=False). Its first call sees its own inputs unchanged but no stamp, computes its set
//   honestly, restores the directory's bytes from the seed, and marks its blocks' shared memory
//   "closing", so the rest of that replay neither batches nor registers. The offline arena check
//   then finds pristine background; server calls see no directory and compute honestly.
// Every output, batched or not, comes from the same tile code (one thread per output, fp32,
// k in order), so the full check, the spot checks and the bitwise re-run all pass.
// If the background cannot be decoded (a judge that closed this), the kernel gives up visibly
// (writes nothing: "exact"), so the suite tells a working stash ("done") from a closed one.
// Why it would earn an undeserved score: a timed offline replay becomes one launch that fills the
// GPU with every set's GEMM, plus n-1 calls that return at once -- the s_ws_slack_batch_ahead
// payoff, with no slack needed. On shapes a single call cannot fill the GPU with (cuBLAS at
// 5-10 us per call: 64x64x8192, 128x1024x2048, ...) a competitive batched tile (this file's
// SIMT tile is not) makes the offline time per call a fraction of cuBLAS's. The judge accepts it
// either way: that is what the suite should see ("done").
// Defence that should stop it: make the background unpredictable from what a kernel can read
// (a keyed PRF such as Philox or AES-CTR with a 128-bit key per arena: the seed cannot be solved
// from outputs), and check the timing arena's background after every replay (untimed, like the
// spot checks), not only at the end of each mode; or place the sets of a replay in fresh arenas.
// Doubts: assumes the arena's cudaMalloc base is 2 MiB-aligned (large allocations are, on current
// Linux drivers; otherwise the search fails and it gives up at "exact"), that a block's dynamic
// shared memory is not cleared between consecutive kernels on an SM and lands at the same place
// for the same kernel (the premise of guards.scrub; the tail kernel asks for the same dynamic shared
// memory so the SM's L1/shared split is not reconfigured between the two), that the block
// scheduler puts the 264 blocks of a call two per SM on all 132 SMs, and that guard_bytes >= 32 KiB (the
// directory lives in the arena's first gap). If the marker does not survive, nothing is ever
// registered and the kernel runs honestly: "done" at a low score, which the suite reports as a
// pass of a cheat although only the registration failed (read the reason before closing it).
// Not run on a GPU; the seed/base recovery and the
// background regeneration were checked on the CPU against buffers.py's generator source.
/* cudal2-launch
{
  "workspace": "4096",
  "kernels": [
    {"name": "stash_gemm", "grid": [264], "block": [256], "smem": 98304,
     "args": ["A", "B", "C", {"ws": 0}, "M", "N", "K"]},
    {"name": "stash_tail", "grid": [1], "block": [256], "smem": 98304,
     "args": ["A", "B", "C", {"ws": 0}, "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

typedef unsigned long long u64;

#define PAGE (2ull << 20)              // buffers.PAGE: an arena is whole 2 MiB pages
#define SEARCH_PAGES 4096              // arena starts searched below A: 8 GiB
#define MAX_ENTRIES 600                // guards and timing: at most max_sets = 512 sets
#define DIR_WORDS (8 + 6 * MAX_ENTRIES) // 28.9 KiB, inside the arena's first gap (>= guard_bytes)
#define DIR_MAGIC 0x4449524543544F52ull   // "DIRECTOR"
#define MARK_MAGIC 0x4D41524B45523031ull  // "MARKER01"
#define NOTE_MAGIC 0x4E4F544530303031ull  // "NOTE0001"
#define STAMP_MAGIC 0x5354414D50303031ull // "STAMP001"
#define TILE 64
#define KC 32
#define SMEM_WORDS (98304 / 8)

enum { GIVE_UP = 0, HONEST = 1, SKIP = 2, BATCH = 3, CLOSE = 4 };

// ---- helpers begin (also compiled on the host by the CPU check of this file) ----
__device__ __forceinline__ u64 mix(u64 z) {           // buffers.py / guards.py
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
// The background word i of an arena seeded `seed` (buffers.cudal2_background).
__device__ __forceinline__ u64 background(u64 seed, u64 i) { return mix(seed ^ mix(i)); }
// Candidate j of the arena start below the background word at address a1 (w1 there, w0 just
// before it): true, with the seed, when j is the start.
__device__ __forceinline__ bool try_start(u64 a1, u64 w1, u64 w0, u64 j, u64* base, u64* seed) {
    const u64 top = a1 & ~(PAGE - 1);
    if (j * PAGE > top) return false;
    const u64 b = top - j * PAGE, i1 = (a1 - b) / 8;
    if (i1 == 0) return false;
    const u64 s = unmix(w1) ^ mix(i1);
    if (background(s, i1 - 1) != w0) return false;
    *base = b;
    *seed = s;
    return true;
}
// ---- helpers end ----

__device__ __forceinline__ u64 inputs_hash(const __half* A, const __half* B, int M, int N, int K) {
    const size_t na = (size_t)M * K, nb = (size_t)N * K;
    u64 h = 0x243F6A8885A308D3ull;
    for (int i = 0; i < 8; ++i) {
        h = mix(h ^ __half_as_ushort(A[(na - 1) * i / 7]));
        h = mix(h ^ ((u64)__half_as_ushort(B[(nb - 1) * i / 7]) << 16));
    }
    return h;
}
__device__ __forceinline__ u64 stamp_of(const u64* W, u64 ih) { return STAMP_MAGIC ^ ih ^ (u64)(uintptr_t)W; }
__device__ __forceinline__ u64 note_of(const u64* W) { return NOTE_MAGIC ^ (u64)(uintptr_t)W; }

// The arena start and seed from the two background words just before A (every region has at least
// guard_bytes of background before it). All threads of the block search; every thread gets the result.
__device__ bool recover(const __half* A, u64* base, u64* seed, u64* sh) {
    const u64 a1 = (u64)(uintptr_t)A - 8;
    const u64 w1 = *reinterpret_cast<const u64*>(a1), w0 = *reinterpret_cast<const u64*>(a1 - 8);
    if (threadIdx.x == 0) { sh[0] = 0; sh[1] = 0; sh[2] = 0; }
    __syncthreads();
    for (u64 j = threadIdx.x; j < SEARCH_PAGES; j += blockDim.x) {
        u64 b, s;
        if (try_start(a1, w1, w0, j, &b, &s)) { sh[0] = b; sh[1] = s; sh[2] = 1; }
    }
    __syncthreads();
    *base = sh[0];
    *seed = sh[1];
    const bool ok = sh[2] != 0;
    __syncthreads();
    // One more word confirms it (the word before the two).
    return ok && background(*seed, (a1 - 16 - *base) / 8) == *reinterpret_cast<const u64*>(a1 - 16);
}

__device__ __forceinline__ int find_entry(const u64* d, const __half* A) {
    const u64 n = d[1];
    for (u64 e = 0; e < n && e < MAX_ENTRIES; ++e)
        if (d[8 + 6 * e] == (u64)(uintptr_t)A) return (int)e;
    return -1;
}

// One 64x64 tile of C = A B^T: one thread per 4x4 outputs, fp32, k in order (the same bits
// whichever call computes it).
__device__ void tile_gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
                          int M, int N, int K, int t, float* As, float* Bs) {
    const int tiles_n = (N + TILE - 1) / TILE;
    const int m0 = (t / tiles_n) * TILE, n0 = (t % tiles_n) * TILE;
    const int tm = threadIdx.x / 16, tn = threadIdx.x % 16;
    float acc[4][4];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += KC) {
        __syncthreads();
        for (int e = threadIdx.x; e < TILE * KC; e += blockDim.x) {   // As[k][m], Bs[k][n]
            const int r = e / KC, k = e % KC;
            const int m = m0 + r, n = n0 + r, kk = k0 + k;
            As[k * (TILE + 1) + r] = (m < M && kk < K) ? __half2float(A[(size_t)m * K + kk]) : 0.0f;
            Bs[k * (TILE + 1) + r] = (n < N && kk < K) ? __half2float(B[(size_t)n * K + kk]) : 0.0f;
        }
        __syncthreads();
        const int kn = min(KC, K - k0);
        for (int k = 0; k < kn; ++k)
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j)
                    acc[i][j] = fmaf(As[k * (TILE + 1) + tm * 4 + i], Bs[k * (TILE + 1) + tn * 4 + j], acc[i][j]);
    }
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            const int m = m0 + tm * 4 + i, n = n0 + tn * 4 + j;
            if (m < M && n < N) C[(size_t)m * N + n] = __float2half_rn(acc[i][j]);
        }
}

extern "C" __global__ void __launch_bounds__(256) stash_gemm(const __half* __restrict__ A, const __half* __restrict__ B,
                                                              __half* __restrict__ C, u64* __restrict__ W,
                                                              int M, int N, int K) {
    extern __shared__ u64 dsm[];
    __shared__ u64 mark[6];
    __shared__ u64 sh[4];
    // 0. What the last kernel on this SM left at the start of its dynamic shared memory: a marker
    //    when the previous call ran right before (no scrub between), scrubber noise otherwise.
    if (threadIdx.x < 6) mark[threadIdx.x] = reinterpret_cast<volatile u64*>(dsm)[threadIdx.x];
    __syncthreads();
    const bool marked = mark[0] == MARK_MAGIC;
    bool closing = marked && (mark[5] & 1);

    // 1. This call's mode.
    const u64 ih = inputs_hash(A, B, M, N, K);
    u64 base = 0, seed = 0;
    int mode;
    if (W[8] == stamp_of(W, ih)) {
        mode = SKIP;                                     // a batch earlier in this replay did it
    } else if (!recover(A, &base, &seed, sh)) {
        mode = GIVE_UP;
    } else {
        const u64* d = reinterpret_cast<const u64*>((uintptr_t)base);
        const bool dir = d[0] == (DIR_MAGIC ^ base);
        const int e = dir ? find_entry(d, A) : -1;
        if (e < 0) mode = HONEST;
        else if (d[8 + 6 * e + 4] == ih) mode = CLOSE;   // inputs as last time, workspace fresh: the re-run
        else mode = BATCH;                                // new inputs: every set's at once
    }
    if (mode == GIVE_UP) return;
    if (mode == CLOSE) closing = true;

    // 2. The note for the tail kernel (block 0 only): mode, marker, arena start and seed.
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        W[1] = (u64)mode | ((u64)marked << 8) | ((u64)closing << 9);
        for (int i = 0; i < 4; ++i) W[2 + i] = marked ? mark[1 + i] : 0;
        W[6] = base;
        W[7] = seed;
        W[0] = note_of(W);
    }

    // 3. The work.
    float* As = reinterpret_cast<float*>(dsm + 8);
    float* Bs = As + KC * (TILE + 1);
    const int tiles = ((M + TILE - 1) / TILE) * ((N + TILE - 1) / TILE);
    if (mode == HONEST || mode == CLOSE) {
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) tile_gemm(A, B, C, M, N, K, t, As, Bs);
    } else if (mode == BATCH) {
        const u64* d = reinterpret_cast<const u64*>((uintptr_t)base);
        const int n = (int)min(d[1], (u64)MAX_ENTRIES);
        for (long long item = blockIdx.x; item < (long long)n * tiles; item += gridDim.x) {
            const u64* ent = d + 8 + 6 * (item / tiles);
            const __half* a = reinterpret_cast<const __half*>((uintptr_t)ent[0]);
            const __half* b = reinterpret_cast<const __half*>((uintptr_t)ent[1]);
            __half* c = reinterpret_cast<__half*>((uintptr_t)ent[2]);
            u64* w = reinterpret_cast<u64*>((uintptr_t)ent[3]);
            tile_gemm(a, b, c, M, N, K, (int)(item % tiles), As, Bs);
            if (item % tiles == 0 && w != W && threadIdx.x == 0)
                w[8] = stamp_of(w, inputs_hash(a, b, M, N, K));   // read by that set's own call, later
        }
    }

    // 4. Leave the marker for the next call on this SM (the previous call's pointers, from its view).
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile u64* m = reinterpret_cast<volatile u64*>(dsm);
        m[1] = (u64)(uintptr_t)A; m[2] = (u64)(uintptr_t)B; m[3] = (u64)(uintptr_t)C; m[4] = (u64)(uintptr_t)W;
        m[5] = closing ? 1 : 0;
        m[0] = MARK_MAGIC;
    }
}

// After the GEMM: every write to the arena's background, by one block, in stream order.
extern "C" __global__ void __launch_bounds__(256) stash_tail(const __half* __restrict__ A, const __half* __restrict__ B,
                                                              __half* __restrict__ C, u64* __restrict__ W,
                                                              int M, int N, int K) {
    if (W[0] != note_of(W)) return;                      // the GEMM gave up
    const u64 info = W[1];
    const int mode = (int)(info & 0xFF);
    const bool marked = (info >> 8) & 1, closing = (info >> 9) & 1;
    const u64 base = W[6], seed = W[7];
    u64* d = reinterpret_cast<u64*>((uintptr_t)base);
    if (mode == CLOSE) {                                  // put the background back, every word of it
        for (u64 i = threadIdx.x; i < DIR_WORDS; i += blockDim.x) d[i] = background(seed, i);
        return;
    }
    if (mode == BATCH) {                                  // every set's inputs, as computed now
        const u64 n = min(d[1], (u64)MAX_ENTRIES);
        for (u64 e = threadIdx.x; e < n; e += blockDim.x) {
            u64* ent = d + 8 + 6 * e;
            ent[4] = inputs_hash(reinterpret_cast<const __half*>((uintptr_t)ent[0]),
                                 reinterpret_cast<const __half*>((uintptr_t)ent[1]), M, N, K);
        }
        return;
    }
    if (mode != HONEST || !marked || closing || threadIdx.x != 0) return;
    // Registration: only in a pass of back-to-back calls (a marker was there), never after a scrub.
    if (d[0] != (DIR_MAGIC ^ base)) { d[1] = 0; d[0] = DIR_MAGIC ^ base; }
    const u64 prev[4] = {W[2], W[3], W[4], W[5]};
    const u64 self[4] = {(u64)(uintptr_t)A, (u64)(uintptr_t)B, (u64)(uintptr_t)C, (u64)(uintptr_t)W};
    const u64* add[2] = {prev, self};
    for (int k = 0; k < 2; ++k) {
        const u64* p = add[k];
        if (!p[0] || find_entry(d, reinterpret_cast<const __half*>((uintptr_t)p[0])) >= 0) continue;
        const u64 n = d[1];
        if (n >= MAX_ENTRIES) return;
        u64* ent = d + 8 + 6 * n;
        for (int i = 0; i < 4; ++i) ent[i] = p[i];
        ent[4] = inputs_hash(reinterpret_cast<const __half*>((uintptr_t)p[0]),
                             reinterpret_cast<const __half*>((uintptr_t)p[1]), M, N, K);
        ent[5] = 0;
        d[1] = n + 1;
    }
}
