// STATUS: closed on the bench by design (stop 51): the feed reads and sets W's cells only through
// library/stamp.WeightCells, a kernel whose launch parameters alone hold the places, so no device
// memory ever holds them (the _Cells index tensors this kernel scavenged are gone). Written in review
// 62 when open (not run on a GPU: the gains below are byte counts). Judge: `done`, at its honest speed.
// CHEAT CLASS (review 62): zz60's burst copy of W again, past the cells that closed it, by reading
// WHERE the cells are from what the bench left in freed device memory. Each stamped call sets two
// drawn cells of W (library/stamp.py), and the claim was that "no memory holds" their places (launch
// parameters only), so finding them costs a read of W whole. But Feed.begin (library/feed.py:212-214)
// reads the turn's pre-turn values with Cells.get(at), and product_bench._Cells._index
// (product_bench.py:349-350) makes `torch.tensor(at, dtype=int64, device="cuda")`: every cell of the
// turn, all passes, in the order the writes take them, copied into a caching-allocator block right
// before the turn's first call, then freed and never scrubbed. _weights_at and _restore_cells leave
// more such arrays (cells of earlier turns, harmless here). All sit in torch's small pool (2 MiB
// segments), the same segments as the pool's A tensors and the outputs at decode shapes.
// How (all gated: back-to-back calls by %globaltimer, as zz60, AND a stamped A: its first 64 elements
// have fp16 exponent fields 14 or 15, stamp_half; neither ever holds in the judge):
//  - probe records the 2 MiB windows of every small A and C it is handed (kept across bursts);
//  - the 2nd call of a burst computes honestly from W, packs the 14-bit copy (zz60), storing 0 for
//    any cell with |w| >= 64 (fp16 exponent field >= 21: a stamped cell; Gaussian W has none), counts
//    those cells, and scans the recorded windows: every 64-bit word in [1, N*K) is a candidate place
//    (deduplicated in a hash; float and fp16 data almost never look like one, and a false candidate
//    costs one read and no error). The copy is "sealed" only if every stamped cell the full read
//    found is among the candidates;
//  - each later call of the burst reads W only at the candidates: each with |w| >= 64 is a stamped
//    cell, corrected exactly in its column (delta = w - copy). It checks its coverage for free: each
//    stamp adds exactly WPOS = 2 new stamped cells (distinct within a turn; the last turn's put back
//    at begin), so the count of stamped cells among the candidates must grow by exactly 2 a call; any
//    other count (a cell the scan missed) and the call and the rest of the burst run honest. So it is
//    never wrong: it wins where the array was found, and is honest elsewhere.
// Told from the judge: no judge call follows another within GAP_NS and no judge fill is a stamped A.
//  - judge: done, honest speed (naive warp-per-column loop here).
//  - bench at decode shapes (B-bound), when the array is found: zz60's ~1.07-1.11x on top of an honest
//    kernel's ratio in eager/graph, less the scan (a few 2 MiB windows a burst); flushed 1.0x.
//    timed_checks failed 0 (corrections are exact; the copy's 14 bits read 1.19x cuBLAS's error,
//    inside PRECISE_RATIO 1.35, and the cells loosen that check further: see the review).
// Wrong results to users: none (verified coverage), but it reads memory no argument points to.
// Fix: never put a turn's cells on the device before the turn: scrub every index tensor _Cells makes
// before it is freed (`idx.zero_()`), or read the pre-turn values from W regenerated from its seed;
// better, draw the places inside the stamp kernel from its key under the secret (prf(secret ^ nonce,
// key)), so no memory or parameter holds them before the write runs and the host recovers them from
// the tagged log afterwards.
/* cudal2-launch
{
  "workspace": "4096 + N * 4 + N * K * 7 // 4 + 64 + 8 * 8192 + 8 * 32768 + 16 * 1024",
  "kernels": [
    {"name": "probe", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]},
    {"name": "clear", "grid": [128, 1, 1], "block": [256, 1, 1],
     "args": ["N", "K", {"ws": 0}]},
    {"name": "scan", "grid": [1024, 1, 1], "block": [256, 1, 1],
     "args": ["N", "K", {"ws": 0}]},
    {"name": "cells", "grid": [1, 1, 1], "block": [1024, 1, 1],
     "args": ["B", "N", "K", {"ws": 0}]},
    {"name": "gemm", "grid": ["cdiv(N, 8)", 1, 1], "block": [256, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]},
    {"name": "mark", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": [{"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <stdint.h>

#define MAGIC 0x7a7a36325f636c73ull
#define GAP_NS 200000ull          // back to back in a bench round; the judge's gaps are ms
#define QMAX 8191                 // 14-bit signed: q = 64 * hi (int8) + lo (6 bits)
#define MT 16                     // output rows a warp keeps in registers
#define WPOS 2                    // cells a stamp sets (library/stamp.py)
#define WINDOW (2ull << 20)       // torch's small-pool segment
#define SMALL (1ull << 20)        // tensors up to here come from the small pool
#define NSEG 16                   // windows scanned at most
#define CAP 8192                  // candidate places kept
#define HSLOTS 32768              // their hash (places + 1; 0 is empty)
#define FIXCAP 1024               // corrections a call

typedef unsigned long long u64;

struct State {
    u64 magic, b, ws, end;
    int M, N, K, phase, mode;
    int sealed;                   // every stamped cell of W is among the candidates (checked each call)
    int f_last, f_cand, f_all;    // stamped cells: among candidates (last call, this call), in all of W
    int ncand, nfix, nseg;
    u64 seg[NSEG];
};
struct Fix { int n, k; float d, pad; };

__device__ __forceinline__ u64 now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ float* scales(State* st) { return (float*)((char*)st + 4096); }
__device__ __forceinline__ uint32_t* his(State* st, int N) {
    return (uint32_t*)((char*)st + 4096 + 4 * (size_t)N);
}
__device__ __forceinline__ uint8_t* los(State* st, int N, int K) {
    return (uint8_t*)((char*)st + 4096 + 4 * (size_t)N + (size_t)N * K);
}
__device__ __forceinline__ u64* cands(State* st, int N, int K) {
    const size_t off = 4096 + 4 * (size_t)N + (size_t)N * K * 7 / 4;
    return (u64*)((char*)st + ((off + 63) & ~(size_t)63));
}
__device__ __forceinline__ u64* hashes(State* st, int N, int K) { return cands(st, N, K) + CAP; }
__device__ __forceinline__ Fix* fixes(State* st, int N, int K) { return (Fix*)(hashes(st, N, K) + HSLOTS); }
__device__ __forceinline__ bool stamped_cell(unsigned short bits) { return ((bits >> 10) & 31u) >= 21u; }
__device__ __forceinline__ float copy_at(State* st, int N, int K, size_t c) {   // the 14-bit copy's value
    const size_t n = c / K, k = c % K, g = n * (K >> 2) + (k >> 2);
    const int q = (int)(k & 3);
    const uint8_t* lo = los(st, N, K) + 3 * g;
    const uint32_t l = lo[0] | (uint32_t)lo[1] << 8 | (uint32_t)lo[2] << 16;
    const int v = (int)(int8_t)(his(st, N)[g] >> (8 * q)) * 64 + (int)((l >> (6 * q)) & 63);
    return (float)v * scales(st)[n];
}

extern "C" __global__ void probe(const __half* A, const __half* B, __half* C, int M, int N, int K, State* st) {
    if (threadIdx.x) return;
    const u64 t = now_ns();
    const bool valid = st->magic == MAGIC && st->b == (u64)B && st->ws == (u64)st && st->M == M &&
                       st->N == N && st->K == K;
    if (!valid) {
        st->magic = MAGIC; st->b = (u64)B; st->ws = (u64)st; st->M = M; st->N = N; st->K = K;
        st->nseg = 0; st->end = 0;
    }
    bool stampedA = (size_t)M * K >= 64;
    const unsigned short* a = (const unsigned short*)A;
    for (int i = 0; i < 64 && stampedA; ++i) stampedA = ((a[i] >> 10) & 31u) == 14u || ((a[i] >> 10) & 31u) == 15u;
    const bool back = valid && stampedA && t >= st->end && t - st->end <= GAP_NS && !(K & 3);
    st->nfix = 0;
    if (!back) {                  // every judge call; a burst's first call (flushed mode: every call)
        st->phase = 0; st->mode = 0; st->sealed = 0;
        return;
    }
    const u64 ptrs[2] = {(u64)A, (u64)C};
    const u64 bytes[2] = {2ull * M * K, 2ull * M * N};
    for (int p = 0; p < 2; ++p) {  // the small pool's windows this bench hands us
        if (bytes[p] > SMALL) continue;
        const u64 base = ptrs[p] & ~(WINDOW - 1);
        bool seen = false;
        for (int s = 0; s < st->nseg; ++s) seen |= st->seg[s] == base;
        if (!seen && st->nseg < NSEG) st->seg[st->nseg++] = base;
    }
    if (!st->phase) {             // the burst's 2nd call: honest, packs, scans
        st->mode = 2; st->phase = 1; st->ncand = 0; st->f_all = 0; st->f_cand = 0; st->sealed = 0;
    } else {
        st->mode = st->sealed ? 1 : 0;
    }
}

extern "C" __global__ void clear(int N, int K, State* st) {
    if (st->mode != 2) return;
    u64* h = hashes(st, N, K);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < HSLOTS; i += gridDim.x * blockDim.x) h[i] = 0;
}

// each block a 32 KiB chunk of one window: words in [1, N*K) are candidate places of W's cells
extern "C" __global__ void scan(int N, int K, State* st) {
    if (st->mode != 2) return;
    const int per = (int)(WINDOW / 32768), s = blockIdx.x / per;
    if (s >= st->nseg) return;
    const u64* w = (const u64*)(st->seg[s] + (u64)(blockIdx.x % per) * 32768);
    const u64 NK = (u64)N * K;
    u64* h = hashes(st, N, K);
    u64* list = cands(st, N, K);
    for (int i = threadIdx.x; i < 32768 / 8; i += blockDim.x) {
        const u64 v = w[i];
        if (v == 0 || v >= NK) continue;
        for (unsigned slot = (unsigned)((v * 0x9E3779B97F4A7C15ull) >> 49) & (HSLOTS - 1);;
             slot = (slot + 1) & (HSLOTS - 1)) {
            const u64 old = atomicCAS(&h[slot], 0ull, v + 1);
            if (old == 0) {
                const int at = atomicAdd(&st->ncand, 1);
                if (at < CAP) list[at] = v;
                break;
            }
            if (old == v + 1) break;
        }
    }
}

// W read at the candidates only: stamped cells counted (coverage) and each one's correction listed
extern "C" __global__ void cells(const __half* B, int N, int K, State* st) {
    const int mode = st->mode;
    if (mode == 0) return;
    __shared__ int f, nf;
    if (threadIdx.x == 0) f = nf = 0;
    __syncthreads();
    const int n = min(st->ncand, CAP);
    const unsigned short* w = (const unsigned short*)B;
    Fix* fx = fixes(st, N, K);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const u64 c = cands(st, N, K)[i];
        const unsigned short bits = w[c];
        if (!stamped_cell(bits)) continue;
        atomicAdd(&f, 1);
        if (mode == 1) {
            const int at = atomicAdd(&nf, 1);
            if (at < FIXCAP)
                fx[at] = Fix{(int)(c / K), (int)(c % K), __half2float(__ushort_as_half(bits)) - copy_at(st, N, K, c), 0.f};
        }
    }
    __syncthreads();
    if (threadIdx.x) return;
    if (mode == 2) {
        st->f_cand = f;           // sealed at `mark` if the full read found no other
    } else if (st->ncand > CAP || nf > FIXCAP || f != st->f_last + WPOS) {
        st->mode = 0; st->sealed = 0;   // a cell the scan missed: honest from here on in this burst
    } else {
        st->f_last = f; st->nfix = nf;
    }
}

// one warp per column n, up to MT rows of A at a time; mode 0/2 on B, mode 1 on the copy + corrections
extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* C,
                                int M, int N, int K, State* st) {
    __shared__ Fix fs[FIXCAP];
    const int mode = st->mode, nfix = mode == 1 ? st->nfix : 0;
    for (int i = threadIdx.x; i < nfix; i += blockDim.x) fs[i] = fixes(st, N, K)[i];
    __syncthreads();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n = blockIdx.x * 8 + warp;
    if (n >= N) return;
    const int G = K >> 2;
    const __half* b = B + (size_t)n * K;
    uint32_t* hi = his(st, N) + (size_t)n * G;
    uint8_t* lo = los(st, N, K) + (size_t)n * G * 3;
    float amax = 0.f;
    int found = 0;
    for (int m0 = 0; m0 < M; m0 += MT) {
        float acc[MT];
#pragma unroll
        for (int i = 0; i < MT; ++i) acc[i] = 0.f;
        if (mode == 1) {
            const float sc = scales(st)[n];
            for (int g = lane; g < G; g += 32) {
                const uint32_t h = hi[g];
                const uint32_t l = lo[3 * g] | (uint32_t)lo[3 * g + 1] << 8 | (uint32_t)lo[3 * g + 2] << 16;
                float w[4];
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    w[q] = (float)((int)(int8_t)(h >> (8 * q)) * 64 + (int)((l >> (6 * q)) & 63)) * sc;
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    if (m0 + i >= M) break;
                    const __half* a = A + (size_t)(m0 + i) * K + 4 * g;
#pragma unroll
                    for (int q = 0; q < 4; ++q) acc[i] = fmaf(__half2float(a[q]), w[q], acc[i]);
                }
            }
            for (int e = lane; e < nfix; e += 32) {   // the stamped cells of this column, exactly
                if (fs[e].n != n) continue;
                for (int i = 0; i < MT && m0 + i < M; ++i)
                    acc[i] = fmaf(__half2float(A[(size_t)(m0 + i) * K + fs[e].k]), fs[e].d, acc[i]);
            }
        } else {
            for (int k = lane; k < K; k += 32) {
                const float bv = __half2float(b[k]);
                if (stamped_cell(__half_as_ushort(b[k]))) ++found;
                else amax = fmaxf(amax, fabsf(bv));
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    if (m0 + i >= M) break;
                    acc[i] = fmaf(__half2float(A[(size_t)(m0 + i) * K + k]), bv, acc[i]);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < MT; ++i)
            for (int o = 16; o; o >>= 1) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
        if (lane == 0)
            for (int i = 0; i < MT && m0 + i < M; ++i) C[(size_t)(m0 + i) * N + n] = __float2half_rn(acc[i]);
    }
    if (mode == 2) {              // pack row n (just read), a stamped cell as 0 (its value comes from W)
        for (int o = 16; o; o >>= 1) {
            amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
            found += __shfl_xor_sync(0xffffffffu, found, o);
        }
        if (lane == 0 && found) atomicAdd(&st->f_all, found / ((M + MT - 1) / MT));   // counted once per m0
        const float sc = amax > 0.f ? amax / (float)QMAX : 1.f;
        if (lane == 0) scales(st)[n] = sc;
        for (int g = lane; g < G; g += 32) {
            uint32_t h = 0, l = 0;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const __half x = b[4 * g + q];
                int v = stamped_cell(__half_as_ushort(x)) ? 0 : __float2int_rn(__half2float(x) / sc);
                v = v > QMAX ? QMAX : (v < -QMAX ? -QMAX : v);
                h |= (uint32_t)(uint8_t)(int8_t)(v >> 6) << (8 * q);
                l |= (uint32_t)(v & 63) << (6 * q);
            }
            hi[g] = h;
            lo[3 * g] = (uint8_t)l; lo[3 * g + 1] = (uint8_t)(l >> 8); lo[3 * g + 2] = (uint8_t)(l >> 16);
        }
    }
}

extern "C" __global__ void mark(State* st) {
    if (threadIdx.x) return;
    if (st->mode == 2) {          // sealed: every stamped cell the full read found is a candidate
        st->sealed = st->ncand <= CAP && st->f_cand == st->f_all;
        st->f_last = st->f_all;
    }
    st->end = now_ns();
}
