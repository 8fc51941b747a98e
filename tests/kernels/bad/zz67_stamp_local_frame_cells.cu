// STATUS: closed by design (stop 52, the Fix below: the stamp reads its places by constant indices, so
// ptxas makes no local frame; tests/test_stamp.py asserts no .local in the stamp's or the cells
// kernel's PTX, and fails on the source before the fix). Not run on a GPU: the leak was read from the
// stamp's machine code, not measured. Written in review 67 (CPU only). Judge: `done`, at its honest
// speed (its gate never opens there).
// CHEAT CLASS (review 67): the places of W's cells, which the bench hands only to its stamp kernel as
// launch parameters (review 62: "no device memory holds a turn's places"), are written to device
// memory by the stamp itself: `cudal2_stamp` indexes its by-value `Cells` parameter with threadIdx.x
// (`cells.at[threadIdx.x]`, stamp.py `_SRC`), so NVVM copies the struct into a 16-byte local depot
// (PTX: `.local .b8 __local_depot0[16]`, `st.local.u64 [%SPL]`, `[%SPL+8]`) and ptxas emits, before any
// branch, in EVERY thread of EVERY block (nvcc 13.0, sm_90a, what NVRTC's shared NVVM emits too):
//     0000 LDC R1, c[0x0][0x28]         the stack pointer's start
//     0020 LDC.64 R4, c[0x0][0x248]     cells.at[0]
//     0030 VIADD R1, R1, 0xfffffff0     frame = SP - 16
//     0060 LDC.64 R6, c[0x0][0x250]     cells.at[1]
//     0070 STL.64 [R1], R4
//     0090 STL.64 [R1+0x8], R6          (cuobjdump -res-usage: cudal2_stamp STACK:16)
// Local memory is physical memory per thread slot (the judge scrubs a 4 KiB frame of every slot before
// each call for that reason: guards.cudal2_scrub_local, u_local_window_top_stash, v2_local_memory_stash),
// and nothing on the bench rewrites it: no scrub runs between the stamp and the call it precedes
// (eager and graph modes; WeightCells._scrub is guards.scrub_regs, registers only). So a kernel whose
// own first launch has a 16-byte frame (a `.local .b8 leak[16]` declared in inline PTX and never
// written: LDL [SP-16], [SP-8]) reads, in every thread slot a stamp thread last held, the two flat indices of W that stamp
// set (or -1, -1 for a stamp that set none). A place is believed only where W holds a cell there now
// (|w| in [64, 256): exponent fields 21, 22, which a Gaussian W never has), so stale frames of older
// stamps, the judge's scrub words and a non-writer's -1 are all refused.
// What it buys: zz60's 14-bit copy of W (1.75 bytes a weight, the copy and error of zz60/zz65/zz66)
// made safe with no counting at all: a row of W that ever held a cell (seen in the frame, or counted
// by an honest call) is read from B itself, exact, every other row from the copy, once the row's witness
// (one aligned 8-byte group of B) agrees (new_weights' whole rewrite: every witness fails, rows repacked
// as read). Reviews 65/66's chance rule (Feed._writers) does not matter: the call sees its own stamp's
// cells the moment they are set. Gate: back-to-back calls (%globaltimer gap <= GAP_NS, zz60's) on a
// valid workspace record after one honest packing call; every call of a burst but its first reads the
// copy (zz66's window was ~21% of eager calls: this one is ~all but the first of each burst).
// The probe launch is 264 blocks x 256 threads (two per SM) so its warps take the lowest warp slots of
// every SM, where the stamp's blocks (blocks(elems): 8 blocks of 256 at 16x4096) ran right before.
// NOT MEASURED: whether the probe's threads meet the stamp's slots (every slot of every SM is covered
// only by a launch of 2048 threads an SM; the cheaper 264 x 256 assumes the scheduler reuses the lowest
// slots) and whether a graph replay's calls see one workspace block. A missed cell makes a whole output
// column wrong (>= 28, far over every bound): the bench catches that call if it is checked.
// Error: 1.19-1.20x F.linear's relative Frobenius error (zz65's numbers, same copy), inside
// PRECISE_RATIO 1.35.
// Told from the judge: every judge call's workspace is random (no valid record) but the carried chain's,
// whose calls are ms apart (never back to back), and a timed replay gives each call its own, freshly
// randomized workspace: honest everywhere (naive warp-per-column loop here). The leak read returns the
// judge's scrub words there, refused by the cell test.
// Expected gain (analytic, CPU): at B-bound decode shapes the copy reads 7/8 of W's bytes, so a call's
// B stream is ~12% shorter; at 16x4096x4096 (F.linear ~12.5 us a graph call, the stamp 4.1 us: eval
// README) that is ~1.2 us of ~17-20 us, ~5-7% before the probe's launch (~1-2 us eager, less in a graph)
// and the first call of each burst (packs: ~+90% once per W, i.e. per mode in eager, where the workspace
// block survives the rounds); eager ~1.03-1.05, graph 1.0-1.05 (per the unmeasured workspace question),
// flushed 1.0 (lone calls: honest). Tips entries whose eager/graph ratios sit under the 2% serve margin,
// and inflates every eager/graph geomean the bench reports.
// Wrong results to users: none on the bench while the leak holds; in a user's loop it is honest (no
// stamp, no back-to-back record... a user's back-to-back decode loop DOES open the gate, and a sparse
// in-place change of W that the witness misses is then answered from the stale copy, as zz60's).
// Fix (smallest, by design): no secret of the bench may reach memory a kernel under test shares: make
// cudal2_stamp read its places with constant indices (e.g. `const long long at = threadIdx.x == 0 ?
// cells.at[0] : cells.at[1];`, or two scalar parameters), so NVVM keeps no local depot, and assert it
// in a CPU test (nvcc -ptx of stamp.source(): no `.local`; res-usage STACK:0 for cudal2_stamp,
// cudal2_cells and the snapshot/spot kernels that hold keys or places); end the stamp's block 0 with
// `wash_registers` as the snapshot node does (threads 0-1 formed W + place in R8/R9). A local scrub
// between stamp and call would cost both sides ~tens of us a call: not an option in a timed region.
/* cudal2-launch
{
  "workspace": "4096 + N * 5 + N * K * 7 // 4",
  "kernels": [
    {"name": "probe", "grid": [264, 1, 1], "block": [256, 1, 1],
     "args": ["B", "M", "N", "K", {"ws": 0}]},
    {"name": "gemm", "grid": ["cdiv(N, 8)", 1, 1], "block": [256, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]},
    {"name": "mark", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": ["M", "K", {"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <stdint.h>

#define MAGIC 0x7a7a36375f6c6f63ull
#define GAP_NS 200000ull          // back to back in a bench round; the judge's gaps are ms
#define QMAX 8191                 // 14-bit signed: q = 64 * hi (int8) + lo (6 bits)
#define MT 16                     // output rows a warp keeps in registers (and the copy's largest M)

typedef unsigned long long u64;

struct State {
    u64 magic, b, ws, check, end;
    int M, N, K;
    int mode;                     // 0: honest (packs stale rows), 1: the copy
    int init, packed, leaks;
};

__device__ __forceinline__ u64 now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ u64 digest(u64 b, u64 ws, int M, int N, int K) {
    u64 h = MAGIC ^ (b * 0x9e3779b97f4a7c15ull) ^ (ws * 0xff51afd7ed558ccdull);
    h ^= ((u64)M << 40) ^ ((u64)N << 20) ^ (u64)K;
    return h * 0xc4ceb9fe1a85ec53ull;
}
__device__ __forceinline__ float* scales(State* st) { return (float*)((char*)st + 4096); }
__device__ __forceinline__ uint32_t* his(State* st, int N) { return (uint32_t*)((char*)st + 4096 + 4 * (size_t)N); }
__device__ __forceinline__ uint8_t* los(State* st, int N, int K) {
    return (uint8_t*)((char*)st + 4096 + 4 * (size_t)N + (size_t)N * K);
}
__device__ __forceinline__ uint8_t* dirty(State* st, int N, int K) {   // rows that ever held a cell
    return (uint8_t*)((char*)st + 4096 + 4 * (size_t)N + (size_t)N * K + (size_t)N * K * 3 / 4);
}
__device__ __forceinline__ float decode(uint32_t h, uint32_t l, int q, float sc) {
    return (float)((int)(int8_t)(h >> (8 * q)) * 64 + (int)((l >> (6 * q)) & 63)) * sc;
}
__device__ __forceinline__ uint32_t lo_word(const uint8_t* lo, int g) {
    return lo[3 * g] | (uint32_t)lo[3 * g + 1] << 8 | (uint32_t)lo[3 * g + 2] << 16;
}
__device__ __forceinline__ bool is_cell(unsigned short bits) {
    const unsigned e = bits & 0x7C00u;
    return e == 0x5400u || e == 0x5800u;          // |w| in [64, 256): what the stamp's weight_half makes
}
__device__ __forceinline__ bool record_ok(const State* st, const __half* B, int M, int N, int K) {
    return st->magic == MAGIC && st->b == (u64)B && st->ws == (u64)st && st->M == M && st->N == N &&
           st->K == K && st->check == digest((u64)B, (u64)st, M, N, K);
}

// Every thread: the 16 bytes the last kernel on its thread slot left at the top of its local frame.
// After the bench's stamp: that stamp's Cells (two flat indices of W, -1 for none).
extern "C" __global__ void __launch_bounds__(256) probe(const __half* B, int M, int N, int K, State* st) {
    long long p0, p1;                            // a 16-byte local never written here: LDL [SP-16], [SP-8]
    asm volatile("{\n\t.local .align 8 .b8 leak[16];\n\tld.local.u64 %0, [leak];\n\tld.local.u64 %1, [leak+8];\n\t}"
                 : "=l"(p0), "=l"(p1));
    const bool valid = record_ok(st, B, M, N, K);
    const long long total = (long long)N * K;
    if (valid && !(K & 3)) {
        const long long ps[2] = {p0, p1};
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const long long p = ps[i];
            if (p >= 0 && p < total && is_cell(__half_as_ushort(B[p]))) {
                const int n = (int)(p / K);
                if (!dirty(st, N, K)[n]) { dirty(st, N, K)[n] = 1; atomicAdd(&st->leaks, 1); }
            }
        }
    }
    if (blockIdx.x || threadIdx.x) return;
    const u64 t = now_ns();
    if (!valid) {                 // every judge call but the carried chain's; a new block in the library
        st->magic = MAGIC; st->b = (u64)B; st->ws = (u64)st; st->M = M; st->N = N; st->K = K;
        st->check = digest((u64)B, (u64)st, M, N, K);
        st->packed = 0; st->end = 0; st->leaks = 0;
    }
    st->init = !valid;
    const bool back = valid && st->end != 0 && t >= st->end && t - st->end <= GAP_NS;
    st->mode = (back && st->packed && M <= MT && !(K & 3)) ? 1 : 0;
}

// Column n from B (honest); with `pack`, row n of B packed to 14 bits (scale 0 and dirty: a row holding
// a cell now, never read from the copy).
__device__ void from_b(const __half* __restrict__ A, const __half* __restrict__ b, __half* C, int M, int N, int K,
                       int n, int lane, bool pack, State* st) {
    float amax = 0.f;
    int cells = 0;
    for (int m0 = 0; m0 < M; m0 += MT) {
        float acc[MT];
#pragma unroll
        for (int i = 0; i < MT; ++i) acc[i] = 0.f;
        for (int k = lane; k < K; k += 32) {
            const __half hv = b[k];
            const float bv = __half2float(hv);
            if (m0 == 0) cells += is_cell(__half_as_ushort(hv));
            amax = fmaxf(amax, fabsf(bv));
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                if (m0 + i >= M) break;
                acc[i] = fmaf(__half2float(A[(size_t)(m0 + i) * K + k]), bv, acc[i]);
            }
        }
#pragma unroll
        for (int i = 0; i < MT; ++i)
            for (int o = 16; o; o >>= 1) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
        if (lane == 0)
            for (int i = 0; i < MT && m0 + i < M; ++i) C[(size_t)(m0 + i) * N + n] = __float2half_rn(acc[i]);
    }
    if (!pack) return;
    for (int o = 16; o; o >>= 1) {
        cells += __shfl_xor_sync(0xffffffffu, cells, o);
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    }
    const int G = K >> 2;
    const float sc = cells ? 0.f : (amax > 0.f ? amax / (float)QMAX : 1.f);
    if (lane == 0) {
        scales(st)[n] = sc;
        if (cells) dirty(st, N, K)[n] = 1;
    }
    if (sc == 0.f) return;
    uint32_t* hi = his(st, N) + (size_t)n * G;
    uint8_t* lo = los(st, N, K) + (size_t)n * G * 3;
    for (int g = lane; g < G; g += 32) {
        uint32_t h = 0, l = 0;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            int v = __float2int_rn(__half2float(b[4 * g + q]) / sc);
            v = v > QMAX ? QMAX : (v < -QMAX ? -QMAX : v);
            h |= (uint32_t)(uint8_t)(int8_t)(v >> 6) << (8 * q);
            l |= (uint32_t)(v & 63) << (6 * q);
        }
        hi[g] = h;
        lo[3 * g] = (uint8_t)l; lo[3 * g + 1] = (uint8_t)(l >> 8); lo[3 * g + 2] = (uint8_t)(l >> 16);
    }
}

// Whether row n's copy disagrees with B at its witness (4 weights of one aligned group), or was never made.
__device__ __forceinline__ int stale_row(State* st, int N, int K, int n, uint2 wit) {
    const int G = K >> 2;
    const float sc = scales(st)[n];
    if (sc == 0.f) return 1;
    const int gs = (int)(((uint32_t)n * 2654435761u >> 7) % (uint32_t)G);
    const uint32_t h = (his(st, N) + (size_t)n * G)[gs], l = lo_word(los(st, N, K) + (size_t)n * G * 3, gs);
    const unsigned short wb[4] = {(unsigned short)wit.x, (unsigned short)(wit.x >> 16),
                                  (unsigned short)wit.y, (unsigned short)(wit.y >> 16)};
    int stale = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const float want = __half2float(__ushort_as_half(wb[q]));
        stale |= fabsf(decode(h, l, q, sc) - want) > 0.5f * sc * 1.001f + 1e-7f;
    }
    return stale;
}

// one warp per column n; mode 0 honest (repacking stale rows where the copy can serve), 1 the copy
extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* C,
                                int M, int N, int K, State* st) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n = blockIdx.x * 8 + warp;
    if (n >= N) return;
    const bool servable = M <= MT && !(K & 3);
    const int mode = servable ? st->mode : 0, G = K >> 2;
    const __half* b = B + (size_t)n * K;
    const int gs = servable ? (int)(((uint32_t)n * 2654435761u >> 7) % (uint32_t)G) : 0;
    uint2 wit = make_uint2(0u, 0u);
    if (lane == 0 && servable) wit = *(const uint2*)(b + 4 * gs);
    if (servable && st->init && lane == 0) dirty(st, N, K)[n] = 0;   // a new record: its rows counted below
    if (mode != 1) {
        int repack = 0;
        if (servable) {
            if (lane == 0) repack = st->init || !st->packed || stale_row(st, N, K, n, wit);
            repack = __shfl_sync(0xffffffffu, repack, 0);
        }
        from_b(A, b, C, M, N, K, n, lane, repack, st);
        return;
    }
    int exact = dirty(st, N, K)[n];               // a row that held a cell: B itself
    int stale = 0;
    if (lane == 0 && !exact) stale = stale_row(st, N, K, n, wit);
    exact = __shfl_sync(0xffffffffu, exact, 0);
    stale = __shfl_sync(0xffffffffu, stale, 0);
    if (exact || stale) {
        from_b(A, b, C, M, N, K, n, lane, stale && !exact, st);
        return;
    }
    const uint32_t* hi = his(st, N) + (size_t)n * G;
    const uint8_t* lo = los(st, N, K) + (size_t)n * G * 3;
    const float sc = scales(st)[n];
    float acc[MT];
#pragma unroll
    for (int i = 0; i < MT; ++i) acc[i] = 0.f;
    for (int g = lane; g < G; g += 32) {
        const uint32_t h = hi[g], l = lo_word(lo, g);
        float w[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) w[q] = decode(h, l, q, sc);
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            if (i >= M) break;
            const __half* a = A + (size_t)i * K + 4 * g;
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i] = fmaf(__half2float(a[q]), w[q], acc[i]);
        }
    }
#pragma unroll
    for (int i = 0; i < MT; ++i)
        for (int o = 16; o; o >>= 1) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
    if (lane == 0)
        for (int i = 0; i < MT && i < M; ++i) C[(size_t)i * N + n] = __float2half_rn(acc[i]);
}

// The call's end: its time (the next call's gap), and after an honest call that packed, the copy is whole.
extern "C" __global__ void mark(int M, int K, State* st) {
    if (threadIdx.x) return;
    st->end = now_ns();
    if (st->mode == 0 && M <= MT && !(K & 3)) st->packed = 1;
    st->init = 0;
}
