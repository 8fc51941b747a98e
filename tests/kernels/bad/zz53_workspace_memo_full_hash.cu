// CHEAT CLASS: reusing earlier results where the library, unlike the judge, keeps state -- a memo of
// C in the workspace keyed on a full hash of A, B and the stored answer (review 53).
// What it tries: cudal2.linear takes C and the workspace from torch's caching allocator, which hands
// the last call's blocks back as that call left them, and the product bench that decides what the
// library serves used to repeat one call on one tensor: there every call after the second would be a
// hit (a copy instead of a GEMM) and read far faster than cuBLAS. In the judge the workspace is
// rewritten before every call, so the memo never answers and the kernel runs at its honest speed;
// in the repeat stage's carried calls it may answer, and then answers correctly (its key is a full
// hash), so it must pass there.
// Layout: ws[0..255] header (magic, shape, hashes of A, B and S, state), ws[256..] per-block partial
// hashes, ws[S_OFF..] S, the last answer. A call: memo_probe (hash A, B, S where the header is
// valid), memo_decide (MISS / ARM / HIT), the GEMM (nothing on HIT; also writes S on ARM), memo_copy
// (S -> C on HIT), memo_rehash and memo_commit.
// Why it must gain nothing: the judge's calls never hit, and the product bench now gives every timed
// call operand contents no call saw before (library/feed.py), so it never hits there either.
// Expected: "done" at the honest tiled kernel's speed, below the vendor at the suite's shape.
/* cudal2-launch
{
  "workspace": "2 * M * N + 65536",
  "m_tiles": [64],
  "kernels": [
    {"name": "memo_probe", "grid": [128, 1, 1], "block": [256, 1, 1],
     "args": ["A", "B", {"ws": 0}, "M", "N", "K"]},
    {"name": "memo_decide", "grid": [1, 1, 1], "block": [128, 1, 1], "args": [{"ws": 0}, "M", "N", "K"]},
    {"name": "tiled_mma_gemm", "grid": ["cdiv(N, 64)", "cdiv(M, 64)", 1], "block": [128, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]},
    {"name": "memo_copy", "grid": [1024, 1, 1], "block": [256, 1, 1], "args": [{"ws": 0}, "C", "M", "N"]},
    {"name": "memo_rehash", "grid": [128, 1, 1], "block": [256, 1, 1],
     "args": ["A", "B", {"ws": 0}, "M", "N", "K"]},
    {"name": "memo_commit", "grid": [1, 1, 1], "block": [128, 1, 1], "args": [{"ws": 0}, "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

#define BM 64
#define BN 64
#define BK 32
#define PAD 8
#define LDS (BK + PAD)   // shared row stride in halves: 80 bytes, a multiple of 16

__device__ __forceinline__ void mma_16816(float* c, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Copy a 64 x 32 tile of a K-contiguous matrix (rows row0.., k0..) into shared memory,
// zero-filling chunks outside [0, rows) x [0, K).
__device__ __forceinline__ void load_tile(__half (*S)[LDS], const __half* __restrict__ G, int rows, int K,
                                          int row0, int k0, int tid) {
#pragma unroll
    for (int i = 0; i < (64 * BK / 8) / 128; ++i) {
        const int c = tid + i * 128;
        const int r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (row0 + r < rows && k0 + kc < K)
            v = *reinterpret_cast<const uint4*>(G + (size_t)(row0 + r) * K + k0 + kc);
        *reinterpret_cast<uint4*>(&S[r][kc]) = v;
    }
}


#define HDR_MAGIC0 0
#define HDR_MAGIC1 1
#define HDR_SHAPE 2
#define HDR_HA 3
#define HDR_HB 4
#define HDR_HS 5
#define HDR_FLAG 6
#define PART 32          // word index of the partials (byte 256)
#define NPART 128        // = memo_probe / memo_rehash grid
#define S_OFF 65536
#define MAGIC0 0x6d656d6f63616368ull
#define MAGIC1 0x9e3779b97f4a7c15ull

__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ unsigned long long shape_word(int M, int N, int K) {
    return ((unsigned long long)(unsigned)M << 42) ^ ((unsigned long long)(unsigned)N << 21) ^ (unsigned)K;
}

// sum over 16-byte chunks of mix(chunk index, contents): order-free, so deterministic
__device__ unsigned long long hash_span(const uint4* p, long long chunks, unsigned long long dom) {
    unsigned long long acc = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < chunks; i += (long long)gridDim.x * blockDim.x) {
        const uint4 v = p[i];
        const unsigned long long lo = ((unsigned long long)v.y << 32) | v.x, hi = ((unsigned long long)v.w << 32) | v.z;
        acc += mix64(mix64(lo ^ (i * 0x2545f4914f6cdd1dull) ^ dom) ^ hi);
    }
    return acc;
}

__device__ unsigned long long block_sum(unsigned long long v) {
    __shared__ unsigned long long red[32];
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    unsigned long long s = 0;
    if (threadIdx.x == 0)
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) s += red[w];
    __syncthreads();
    return s;
}

// partials of A and B (probe) or of S alone (rehash), one word per block and operand
__device__ void hash_ab(const __half* A, const __half* B, unsigned long long* W, int M, int N, int K) {
    const unsigned long long ha = block_sum(hash_span(reinterpret_cast<const uint4*>(A), (long long)M * K / 8, 1));
    const unsigned long long hb = block_sum(hash_span(reinterpret_cast<const uint4*>(B), (long long)N * K / 8, 2));
    if (threadIdx.x == 0) { W[PART + blockIdx.x] = ha; W[PART + NPART + blockIdx.x] = hb; }
}
__device__ void hash_s(unsigned long long* W, int M, int N) {
    const uint4* S = reinterpret_cast<const uint4*>(reinterpret_cast<const unsigned char*>(W) + S_OFF);
    const unsigned long long hs = block_sum(hash_span(S, (long long)M * N / 8, 3));   // M*N % 8 == 0 here
    if (threadIdx.x == 0) W[PART + 2 * NPART + blockIdx.x] = hs;
}

// header states: random (the judge, always), SEEN (a call of this shape ran here), ARMED (S and
// the hashes of the A, B and S it was computed from are valid)
#define ST_SEEN 0x5345454eull
#define ST_ARMED 0x41524d44ull
#define F_MISS 0ull      // judge path: compute, mark SEEN (3 words), nothing else
#define F_ARM 2ull       // second call on a reused workspace: compute, keep S and the hashes
#define F_HIT 1ull       // inputs and S unchanged since they were armed: S -> C, no GEMM
#define HDR_STATE 7

__device__ __forceinline__ bool header_ok(const unsigned long long* W, int M, int N, int K) {
    return W[HDR_MAGIC0] == MAGIC0 && W[HDR_MAGIC1] == MAGIC1 && W[HDR_SHAPE] == shape_word(M, N, K)
        && (W[HDR_STATE] == ST_SEEN || W[HDR_STATE] == ST_ARMED);
}

extern "C" __global__ void memo_probe(const __half* __restrict__ A, const __half* __restrict__ B,
                                      unsigned long long* W, int M, int N, int K) {
    if (!header_ok(W, M, N, K)) return;      // the judge's random workspace: always this exit
    hash_ab(A, B, W, M, N, K);
    if (W[HDR_STATE] == ST_ARMED) hash_s(W, M, N);
}

__device__ void sums(const unsigned long long* W, unsigned long long* h) {
    h[0] = h[1] = h[2] = 0;
    for (int b = 0; b < NPART; ++b) {
        h[0] += W[PART + b]; h[1] += W[PART + NPART + b]; h[2] += W[PART + 2 * NPART + b];
    }
}

extern "C" __global__ void memo_decide(unsigned long long* W, int M, int N, int K) {
    if (threadIdx.x != 0) return;
    unsigned long long f = F_MISS, h[3];
    if (header_ok(W, M, N, K)) {
        sums(W, h);
        f = (W[HDR_STATE] == ST_ARMED && h[0] == W[HDR_HA] && h[1] == W[HDR_HB] && h[2] == W[HDR_HS]) ? F_HIT : F_ARM;
    }
    W[HDR_FLAG] = f;        // always written: the workspace holds random bytes in the judge
}

extern "C" __global__ void memo_copy(const unsigned long long* __restrict__ W, __half* __restrict__ C, int M, int N) {
    if (W[HDR_FLAG] != F_HIT) return;
    const uint4* S = reinterpret_cast<const uint4*>(reinterpret_cast<const unsigned char*>(W) + S_OFF);
    uint4* D = reinterpret_cast<uint4*>(C);
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (long long)M * N / 8; i += (long long)gridDim.x * blockDim.x)
        D[i] = S[i];
}

extern "C" __global__ void memo_rehash(const __half* __restrict__ A, const __half* __restrict__ B,
                                       unsigned long long* W, int M, int N, int K) {
    if (W[HDR_FLAG] != F_ARM) return;
    hash_s(W, M, N);          // the S the GEMM just wrote (A and B were hashed by the probe)
}

extern "C" __global__ void memo_commit(unsigned long long* W, int M, int N, int K) {
    if (threadIdx.x != 0) return;
    const unsigned long long f = W[HDR_FLAG];
    if (f == F_HIT) return;
    if (f == F_ARM) {
        unsigned long long h[3];
        sums(W, h);
        W[HDR_HA] = h[0]; W[HDR_HB] = h[1]; W[HDR_HS] = h[2];
        W[HDR_STATE] = ST_ARMED;
    } else {
        W[HDR_STATE] = ST_SEEN;
    }
    W[HDR_SHAPE] = shape_word(M, N, K);
    W[HDR_MAGIC0] = MAGIC0; W[HDR_MAGIC1] = MAGIC1;
}

extern "C" __global__ void __launch_bounds__(128)
tiled_mma_gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
               int M, int N, int K, unsigned long long* __restrict__ W) {
    const unsigned long long flag = W[HDR_FLAG];
    if (flag == F_HIT) return;   // memo hit: memo_copy fills C
    __half* S = reinterpret_cast<__half*>(reinterpret_cast<unsigned char*>(W) + S_OFF);
    __shared__ __align__(16) __half As[BM][LDS];
    __shared__ __align__(16) __half Bs[BN][LDS];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 1, wn = warp & 1;          // warp's 32 x 32 sub-tile
    const int g = lane >> 2, t = lane & 3;            // mma fragment coordinates
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    float acc[2][4][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile(As, A, M, K, m0, k0, tid);
        load_tile(Bs, B, N, K, n0, k0, tid);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            uint32_t af[2][4], bf[4][2];
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
                const int r = wm * 32 + mi * 16 + g;
                af[mi][0] = *reinterpret_cast<const uint32_t*>(&As[r][kk + t * 2]);
                af[mi][1] = *reinterpret_cast<const uint32_t*>(&As[r + 8][kk + t * 2]);
                af[mi][2] = *reinterpret_cast<const uint32_t*>(&As[r][kk + t * 2 + 8]);
                af[mi][3] = *reinterpret_cast<const uint32_t*>(&As[r + 8][kk + t * 2 + 8]);
            }
#pragma unroll
            for (int ni = 0; ni < 4; ++ni) {
                const int c = wn * 32 + ni * 8 + g;
                bf[ni][0] = *reinterpret_cast<const uint32_t*>(&Bs[c][kk + t * 2]);
                bf[ni][1] = *reinterpret_cast<const uint32_t*>(&Bs[c][kk + t * 2 + 8]);
            }
#pragma unroll
            for (int mi = 0; mi < 2; ++mi)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni) mma_16816(acc[mi][ni], af[mi], bf[ni]);
        }
        __syncthreads();   // everyone is done reading before the next tile overwrites shared memory
    }

    // Epilogue: c0, c1 at (row g, cols 2t, 2t+1); c2, c3 at (row g + 8, same cols).
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int m = m0 + wm * 32 + mi * 16 + g + (e >= 2 ? 8 : 0);
                const int n = n0 + wn * 32 + ni * 8 + t * 2 + (e & 1);
                if (m < M && n < N) {
                    const __half h = __float2half_rn(acc[mi][ni][e]);
                    C[(size_t)m * N + n] = h;
                    if (flag == F_ARM) S[(size_t)m * N + n] = h;   // the memo's copy, only when arming
                }
            }
}
