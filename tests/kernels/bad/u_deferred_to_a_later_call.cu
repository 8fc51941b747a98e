// CHEAT CLASS: batching across calls -- deferral: calls of a replay return without computing, and a
// later call of the same replay computes every deferred set at once (no pointer is ever predicted).
// What it tries: every earlier "batching" cheat had to learn the pointers of sets whose calls had
// NOT run yet (batch-ahead: a directory kept across replays, a decoded background, a stash in
// local memory), and the judge closed those by scrubbing the chip before every replay and making
// the background a PRF. Deferral needs only the pointers of calls that HAVE already run in the
// same replay, and those reach it through the one channel the judge leaves open by design: the
// calls of one offline replay (and of the eager pass) run back to back with no scrub between them
// (guards.scrub runs before a replay, not between its calls; tests/kernels/probe/state_probe_v2.cu
// says so and shows that shared memory survives between launches).
// - The kernel runs a persistent grid of 132 CTAs with 160 KiB of dynamic shared memory each, so
//   every SM holds exactly one CTA of every call and the same physical shared memory window.
//   At the top of that window every CTA keeps a directory: (magic, shape, count, pending) and one
//   entry (A, B, C, deferred?) per call seen since the last scrub. Each call appends its entry
//   (idempotently: a second CTA of the same call on one SM sees its own entry last and does not
//   append again), so every SM holds the same directory.
// - Call index j (0 = no valid directory: the first call after a scrub, i.e. every verification
//   call, every server call and the first call of every replay) decides:
//     j == 0            compute own set (honest);
//     1 <= j < P - 1    defer: mark the entry, return at once (the C of this set stays the random
//                        prefill until later in the replay);
//     j >= P - 1        compute own set and every deferred set of the directory, in one grid
//                        (this is where the gain is: P - 2 sets computed in parallel by one launch
//                        instead of P - 2 launches that each fill a fraction of the GPU).
//   P is a LOWER bound on the judge's number of timing sets, which the launch spec computes from
//   the shape: judge.time() takes nsets = max(2, min(max_sets = 512, want, memory)) with
//   want >= ceil(rotation_l2_factor (2) * l2_bytes / min_bytes). Assuming l2_bytes >= 48 MiB
//   (H100/H200: 50 MiB), P = min(512, ceil(2 * 48 MiB / min_bytes)) <= nsets, so the batch call
//   always comes; calls past it compute their own sets. At 257x136x1032: P = 115, nsets = 120.
// - Belt and braces: a call defers only if its own four pointers (A, B, C and the empty workspace
//   region, passed as {"ws": 0}) span more than their sizes plus three verification gaps. In a
//   verification arena (4 regions) they never do; in a timing arena (4 x nsets regions shuffled)
//   they almost always do. (The judge states "no address tells a checked call from a timed one";
//   the span of a call's own buffers does, with no memory read at all.)
// Every output, deferred or not, comes from the same tile code (WMMA 16x16x16, fp32 accumulate,
// k in order, one CTA per 64x64 tile): the spot checks after each replay, the full check of the
// final replay's sample and the bitwise re-run all see correct, deterministic outputs, because
// all of them look only after the whole replay has finished. Nothing outside A, B, C is written
// (no workspace, no background), inputs are never touched.
// Why it would earn an undeserved score: offline time per call = replay time / nsets; a replay
// is now ~P cheap bookkeeping launches plus one batched GEMM of P - 2 sets, whereas each honest
// call of a small shape occupies the GPU for its own launch and tail. A call's output is not
// ready when the call completes -- any consumer of C_j after call j would read garbage -- which
// is exactly what the offline number claims to measure. Server mode (scrub before each call)
// sees the honest path, so the offline/server ratio is the tell.
// Defence that would stop it: check outputs at call granularity inside timed replays (a trusted
// snapshot of a few random outputs of C_j between call j and call j + 1, present in every
// runner's graph), or otherwise make "C_j is final when call j completes" an observed property.
// (From an adversarial review of the judge; it passed before snapshots.) Closed by harness/snapshots.py:
// a snapshot node behind every call of every graph, armed at random calls of each replay: must fail at "timing".
// cudal2-shapes: 257x136x1032, 128x128x256, 64x64x64, 256x128x512
/* cudal2-launch
{
  "kernels": [
    {"name": "deferred_gemm", "grid": [132], "block": [256], "smem": 163840,
     "args": ["A", "B", "C", {"ws": 0}, "M", "N", "K",
              {"int": "min(512, max(2, cdiv(2 * 50331648, 2 * (M * K + N * K + M * N))))"}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <mma.h>
#include <cstdint>

using namespace nvcuda;

#define BM 64
#define BN 64
#define BK 32
#define LDS 40                 // halves per smem row of the A/B tiles (32 + 8 pad)
#define LDC 68                 // floats per smem row of the C tile
#define SMEM_BYTES 163840      // > 114 KiB: one CTA per SM
#define DIR_OFF 147456         // the directory: the last 16 KiB of the window
#define MAXE 512
#define MAGIC 0xD3F3E4EDBA7C4A11ull
#define GAP_MAX (2 * 65536 + 256)   // verification gap bound (guard_bytes = 64 KiB)

enum { OWN = 0, DEFER = 1, BATCH = 2 };

struct Entry { unsigned long long a, b, c, flag; };
struct Dir {
    unsigned long long magic, shape, count, pending, magic2, batched;   // batched: j of the batch call + 1
    unsigned long long pad[2];
    Entry e[MAXE];
};

__device__ __forceinline__ bool span_says_timing(const void* A, const void* B, const void* C, const void* W,
                                                 int M, int N, int K) {
    const unsigned long long p[4] = {(unsigned long long)A, (unsigned long long)B, (unsigned long long)C,
                                     (unsigned long long)W};
    const unsigned long long s[4] = {2ull * M * K, 2ull * N * K, 2ull * M * N, 0ull};
    unsigned long long lo = ~0ull, hi = 0, sum = 0;
    for (int i = 0; i < 4; ++i) {
        lo = p[i] < lo ? p[i] : lo;
        hi = p[i] + s[i] > hi ? p[i] + s[i] : hi;
        sum += s[i];
    }
    return hi - lo > sum + 3ull * GAP_MAX;
}

// One 64x64 output tile of C = A * B^T (fp32 accumulation in the tensor cores, k in order).
__device__ void gemm_tile(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
                          int M, int N, int K, int m0, int n0, unsigned char* smem) {
    __half* As = reinterpret_cast<__half*>(smem);
    __half* Bs = As + BM * LDS;
    float* Cs = reinterpret_cast<float*>(smem + 2 * BM * LDS * sizeof(__half));
    const int t = threadIdx.x, warp = t >> 5;
    const int wm = warp & 3, wn = warp >> 2;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
    wmma::fill_fragment(acc[0], 0.0f);
    wmma::fill_fragment(acc[1], 0.0f);
    const int row = t >> 2, ck = (t & 3) * 8;
    for (int k0 = 0; k0 < K; k0 += BK) {
        uint4 va = make_uint4(0, 0, 0, 0), vb = make_uint4(0, 0, 0, 0);
        if (m0 + row < M && k0 + ck < K) va = *reinterpret_cast<const uint4*>(A + (size_t)(m0 + row) * K + k0 + ck);
        if (n0 + row < N && k0 + ck < K) vb = *reinterpret_cast<const uint4*>(B + (size_t)(n0 + row) * K + k0 + ck);
        *reinterpret_cast<uint4*>(As + row * LDS + ck) = va;
        *reinterpret_cast<uint4*>(Bs + row * LDS + ck) = vb;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
            wmma::load_matrix_sync(fa, As + (wm * 16) * LDS + kk, LDS);
#pragma unroll
            for (int f = 0; f < 2; ++f) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
                wmma::load_matrix_sync(fb, Bs + (wn * 32 + f * 16) * LDS + kk, LDS);
                wmma::mma_sync(acc[f], fa, fb, acc[f]);
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int f = 0; f < 2; ++f)
        wmma::store_matrix_sync(Cs + (wm * 16) * LDC + wn * 32 + f * 16, acc[f], LDC, wmma::mem_row_major);
    __syncthreads();
    for (int i = t; i < BM * BN; i += blockDim.x) {
        const int r = i / BN, c = i % BN;
        if (m0 + r < M && n0 + c < N) C[(size_t)(m0 + r) * N + n0 + c] = __float2half_rn(Cs[r * LDC + c]);
    }
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(256) deferred_gemm(const __half* A, const __half* B, __half* C,
                                                                const unsigned char* W, int M, int N, int K, int P) {
    extern __shared__ __align__(128) unsigned char smem[];
    volatile Dir* d = reinterpret_cast<volatile Dir*>(smem + DIR_OFF);
    __shared__ int s_mode, s_nlist;
    __shared__ unsigned short s_list[MAXE];
    const unsigned long long shape = ((unsigned long long)M << 42) ^ ((unsigned long long)N << 21) ^ (unsigned)K;
    if (threadIdx.x == 0) {
        const bool valid = d->magic == MAGIC && d->shape == shape && d->count <= MAXE && d->magic2 == (MAGIC ^ d->count);
        unsigned long long count = valid ? d->count : 0, pending = valid ? d->pending : 0;
        unsigned long long batched = valid ? d->batched : 0;
        unsigned long long j;
        if (count > 0 && d->e[count - 1].a == (unsigned long long)A && d->e[count - 1].b == (unsigned long long)B &&
            d->e[count - 1].c == (unsigned long long)C) {
            j = count - 1;                        // another CTA of this call already appended here
        } else {
            j = count;
            if (batched) {                        // a new call after the batch: its flags are spent
                for (unsigned long long i = 0; i < count; ++i) d->e[i].flag = 0;
                pending = 0;
                batched = 0;
            }
            if (count < MAXE) {
                d->e[count].a = (unsigned long long)A; d->e[count].b = (unsigned long long)B;
                d->e[count].c = (unsigned long long)C; d->e[count].flag = 0;
                count++;
            }
        }
        int mode = OWN;
        if (j >= 1 && j + 1 < (unsigned long long)P && j < MAXE &&
            span_says_timing(A, B, C, W, M, N, K)) {
            mode = DEFER;
            if (!d->e[j].flag) { d->e[j].flag = 1; pending++; }
        } else if (j + 1 >= (unsigned long long)P && pending > 0) {
            mode = BATCH;                         // flags stay set until the next call: a second CTA
            batched = j + 1;                      // of this call on the same SM batches the same list
        }
        int n = 0;
        if (mode == BATCH)
            for (unsigned long long i = 0; i < count && n < MAXE; ++i)
                if (d->e[i].flag) s_list[n++] = (unsigned short)i;
        s_nlist = n;
        s_mode = mode;
        d->shape = shape; d->count = count; d->pending = pending; d->batched = batched;
        d->magic = MAGIC; d->magic2 = MAGIC ^ count;
    }
    __syncthreads();
    const int mode = s_mode;
    if (mode == DEFER) return;                    // C of this set: computed later in the replay
    const int tm = (M + BM - 1) / BM, tn = (N + BN - 1) / BN, tiles = tm * tn;
    const int sets = 1 + (mode == BATCH ? s_nlist : 0);
    for (int item = blockIdx.x; item < sets * tiles; item += gridDim.x) {
        const int s = item / tiles, tile = item % tiles;
        const __half *a = A, *b = B;
        __half* c = C;
        if (s > 0) {
            const int e = s_list[s - 1];
            a = reinterpret_cast<const __half*>(d->e[e].a);
            b = reinterpret_cast<const __half*>(d->e[e].b);
            c = reinterpret_cast<__half*>(d->e[e].c);
        }
        gemm_tile(a, b, c, M, N, K, (tile / tn) * BM, (tile % tn) * BN, smem);
    }
}
