// attn-causal: out = softmax(q . k^T / sqrt(d) + causal mask) . v per head, fp16 in and out.
//   q, k, v, out: bh x s x d fp16, dense row-major. Query i attends to keys 0..i.
// Technique: FlashAttention-2 style forward pass on the tensor cores (mma.sync m16n8k16, fp32
// accumulators), never materializing the s x s scores.
//   * A CTA owns 64 query rows of one head (4 warps x 16 rows) and walks the key blocks
//     0 .. its diagonal block (64 keys each; the causal mask only touches the diagonal block).
//     K/V blocks are double-buffered in shared memory with cp.async (zero-filled past s and past
//     d), so the next block loads while this one is computed.
//   * S = Q K^T: Q fragments are loaded once (ldmatrix) and kept in registers; K rows are the
//     "col" operand as stored ([key][d]), read with ldmatrix.x4.
//   * Online softmax in fp32 on the accumulator registers: running row max m and row sum l per
//     row (quad shuffles), exp2 with log2(e)/sqrt(d) folded into one FMA, O rescaled by
//     exp2(m_old - m_new) when the max grows.
//   * O += P V: P is re-packed from the S accumulators straight into mma A fragments (no shared
//     memory round trip); V ([key][d], i.e. row-major K x N) is read with ldmatrix.x4.trans.
//     P is split as P = P_hi + P_lo, two fp16 numbers, and both halves are multiplied: a single
//     fp16 P (2^-11 relative error per weight) is too coarse for this task's tolerance where an
//     output nearly cancels (a short causal row), while hi + lo carries P to about 2^-22.
//   * Shared memory rows are 256 bytes; 16-byte chunk c of row r is stored at c ^ (r & 7), so
//     every ldmatrix phase (8 consecutive rows, one logical chunk) is bank-conflict free.
//   * Epilogue: O / l in fp32, rounded to fp16 once, staged through the warp's own rows of the Q
//     tile and written with 16-byte stores.
//   * Scheduling: the flat grid hands out the heaviest query blocks (most key blocks) first.
//   * Any positive sizes: s tails are masked (keys) and predicated (rows); d <= 128 with
//     d % 8 == 0 runs the tensor-core path with zero-padded columns; any other d takes a plain
//     fp32 fallback (one warp per query row, two passes: max/sum, then the weighted sum of v).
//   * Deterministic: fixed summation order, no atomics.
/* cudal2-launch
{
  "task": "attn-causal",
  "kernels": [
    {"name": "attn_causal", "grid": ["bh * cdiv(s, 64)", 1, 1], "block": [128, 1, 1], "smem": 81920,
     "args": ["q", "k", "v", "out", "bh", "s", "d"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstddef>
#include <cstdint>

namespace {

// ---- PTX wrappers ----------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One 16-byte global->shared copy, bypassing L1 (.cg). With `valid` false the source size is 0:
// nothing is read and the 16 destination bytes are zero-filled (the address must still be valid).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Wait until at most N committed groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Four 8x8 b16 matrices; lane i supplies the address of row i % 8 of matrix i / 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// The same, transposed: lane t receives (row 2(t%4) .. +1, column t/4) of each matrix, i.e. the
// mma "col" B fragment of a matrix stored row-major as [k][n].
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// d += a (16x16, row) * b (16x8, col): fp16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---- tiling ----------------------------------------------------------------------------------
constexpr int BR = 64;                    // query rows per CTA: 16 per warp
constexpr int BC = 64;                    // keys per block
constexpr int D = 128;                    // head dim of the tensor-core path (smaller d: zero-padded)
constexpr int THREADS = 128;
constexpr int DCH = D / 8;                // 16-byte chunks per tile row (16)
constexpr int LOAD_STEP = THREADS / DCH;  // tile rows per copy pass (8)
constexpr int TILE_BYTES = BR * D * 2;    // one 64 x 128 fp16 tile: 16 KiB
constexpr int SMEM_BYTES = 5 * TILE_BYTES;   // Q | K0 | K1 | V0 | V1 = 81920: the launch block's "smem"
constexpr int DT = D / 8;                 // n-tiles of O per warp (16)
constexpr int KT = BC / 8;                // n-tiles of S per warp (8)
constexpr float LOG2E = 1.4426950408889634f;

static_assert(BR == BC, "the causal mask touches only the diagonal block when BR == BC");
static_assert(BR == 16 * (THREADS / 32), "16 query rows per warp");
static_assert(SMEM_BYTES == 81920, "the launch block declares 81920 bytes of dynamic shared memory");

__device__ __forceinline__ int swz(int row, int chunk) {   // -> offset in halves of a [64][128] tile
    return row * D + ((chunk ^ (row & 7)) << 3);
}

// Rows row0 .. row0+63 of one head's [s][d] matrix into a swizzled [64][128] tile; rows past s
// and columns past d are zero-filled. Thread tid copies chunk tid % 16 of rows tid / 16 + 8 i:
// 16 consecutive threads read one 256-byte row (coalesced), and the XOR is the same for all i.
__device__ __forceinline__ void load_tile(uint32_t dst, const __half* __restrict__ head, int row0, int s, int d) {
    const int ch = threadIdx.x % DCH, r0 = threadIdx.x / DCH;
    const bool col_in = ch * 8 < d;
    const uint32_t d0 = dst + swz(r0, ch) * 2;
#pragma unroll
    for (int i = 0; i < BR / LOAD_STEP; ++i) {
        const int grow = row0 + r0 + i * LOAD_STEP;
        const bool in = col_in && grow < s;
        cp_async_16(d0 + i * LOAD_STEP * D * 2, in ? head + size_t(grow) * d + ch * 8 : head, in);
    }
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
}

// x = hi + lo with hi = fp16(x) and lo = fp16(x - hi), for a pair; returns (hi, lo) packed.
__device__ __forceinline__ void split_half2(float x0, float x1, uint32_t& hi, uint32_t& lo) {
    const __half2 h = __floats2half2_rn(x0, x1);
    const float2 f = __half22float2(h);
    hi = *reinterpret_cast<const uint32_t*>(&h);
    lo = pack_half2(x0 - f.x, x1 - f.y);
}

// ---- the tensor-core path: d <= 128, d % 8 == 0 ------------------------------------------------
// q, k, v, out point at one head's [s][d]; this CTA owns query rows q0 .. q0+63.
__device__ __forceinline__ void attn_tile(const __half* __restrict__ q, const __half* __restrict__ k,
                                          const __half* __restrict__ v, __half* __restrict__ out, int s, int d,
                                          int q0, unsigned char* smem) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, qd = lane & 3;   // m16n8 accumulator: (g, 2qd..2qd+1) and (g+8, ..)
    const uint32_t sQ = smem_u32(smem), sK = sQ + TILE_BYTES, sV = sQ + 3 * TILE_BYTES;
    const float scale_log2 = LOG2E / sqrtf(float(d));   // softmax scale 1/sqrt(d), in the exp2 domain
    const int n_kv = (min(q0 + BR, s) + BC - 1) / BC;    // key blocks 0 .. the diagonal one
    const int row0 = q0 + warp * 16 + g;                 // this thread's rows: row0 and row0 + 8
    // ldmatrix lanes. K (x4, [key][d]): lanes 0-7 keys 0-7 at d 0-7 (b0 of key tile 0), 8-15 keys
    // 0-7 at d 8-15 (b1), 16-31 the same for keys 8-15 (key tile 1). V (x4.trans, [key][d]): lanes
    // 0-7 keys 0-7, 8-15 keys 8-15 at d 0-7 (b0, b1 of d tile 0), 16-31 the same at d 8-15.
    const int k_row = (lane & 7) + ((lane >> 4) << 3), k_half = (lane >> 3) & 1;
    const int v_row = (lane & 7) + (((lane >> 3) & 1) << 3), v_half = lane >> 4;

    load_tile(sQ, q, q0, s, d);
    load_tile(sK, k, 0, s, d);
    load_tile(sV, v, 0, s, d);
    cp_async_commit();

    uint32_t qf[D / 16][4];   // Q fragments for the 8 k16 steps over d, loaded once
    float o[DT][4];           // O accumulators: 16 rows x 128 columns per warp
#pragma unroll
    for (int t = 0; t < DT; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[t][e] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY};   // running row max of the raw scores
    float l[2] = {0.0f, 0.0f};             // running row sum (this thread's columns; quad-summed at the end)

    for (int j = 0; j < n_kv; ++j) {
        const int buf = j & 1;
        // Prefetch block j + 1 into the other buffer (its last readers finished at the barrier that
        // ended iteration j - 1); one commit group per iteration, possibly empty.
        if (j + 1 < n_kv) {
            load_tile(sK + (buf ^ 1) * TILE_BYTES, k, (j + 1) * BC, s, d);
            load_tile(sV + (buf ^ 1) * TILE_BYTES, v, (j + 1) * BC, s, d);
        }
        cp_async_commit();
        cp_async_wait<1>();   // block j (and Q) landed for this thread ...
        __syncthreads();      // ... and for every thread
        if (j == 0) {
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk)
                ldmatrix_x4(qf[kk], sQ + swz(warp * 16 + (lane & 15), kk * 2 + (lane >> 4)) * 2);
        }

        // ---- S = Q K^T for 16 rows x 64 keys per warp ----
        float sc[KT][4];
#pragma unroll
        for (int t = 0; t < KT; ++t)
#pragma unroll
            for (int e = 0; e < 4; ++e) sc[t][e] = 0.0f;
        const uint32_t kb = sK + buf * TILE_BYTES;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
            for (int jp = 0; jp < KT / 2; ++jp) {
                uint32_t r[4];   // b0, b1 of key tiles 2jp and 2jp+1
                ldmatrix_x4(r, kb + swz(jp * 16 + k_row, kk * 2 + k_half) * 2);
                const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                mma_16816(sc[2 * jp], qf[kk], b0);
                mma_16816(sc[2 * jp + 1], qf[kk], b1);
            }

        // ---- causal mask (diagonal block) and the s tail ----
        const int k0 = j * BC;
        if (k0 + BC - 1 > q0 + warp * 16 || k0 + BC > s) {
#pragma unroll
            for (int t = 0; t < KT; ++t)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int key = k0 + t * 8 + 2 * qd + (e & 1), row = row0 + (e >> 1) * 8;
                    if (key > row || key >= s) sc[t][e] = -INFINITY;
                }
        }

        // ---- online softmax (fp32) ----
        float mx[2] = {m[0], m[1]};
#pragma unroll
        for (int t = 0; t < KT; ++t) {
            mx[0] = fmaxf(mx[0], fmaxf(sc[t][0], sc[t][1]));
            mx[1] = fmaxf(mx[1], fmaxf(sc[t][2], sc[t][3]));
        }
        float ms[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));   // the quad holds the row
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            ms[r] = mx[r] == -INFINITY ? 0.0f : mx[r] * scale_log2;          // never -inf - -inf
            const float alpha = exp2f(m[r] * scale_log2 - ms[r]);           // 0 on the first block
            m[r] = mx[r];
            l[r] *= alpha;
#pragma unroll
            for (int t = 0; t < DT; ++t) {
                o[t][2 * r] *= alpha;
                o[t][2 * r + 1] *= alpha;
            }
        }
#pragma unroll
        for (int t = 0; t < KT; ++t)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float p = exp2f(fmaf(sc[t][e], scale_log2, -ms[e >> 1]));   // masked: exp2(-inf) = 0
                sc[t][e] = p;
                l[e >> 1] += p;
            }

        // ---- O += P V, P = P_hi + P_lo ----
        // A fragment of keys kk*16 .. +15 = S n-tiles 2kk and 2kk+1: a0 = (g, 2qd..) of tile 2kk,
        // a1 = (g+8, ..) of tile 2kk, a2, a3 the same of tile 2kk+1.
        const uint32_t vb = sV + buf * TILE_BYTES;
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) {
            uint32_t ph[4], pl[4];
            split_half2(sc[2 * kk][0], sc[2 * kk][1], ph[0], pl[0]);
            split_half2(sc[2 * kk][2], sc[2 * kk][3], ph[1], pl[1]);
            split_half2(sc[2 * kk + 1][0], sc[2 * kk + 1][1], ph[2], pl[2]);
            split_half2(sc[2 * kk + 1][2], sc[2 * kk + 1][3], ph[3], pl[3]);
#pragma unroll
            for (int dp = 0; dp < DT / 2; ++dp) {
                uint32_t r[4];   // b0, b1 of d tiles 2dp and 2dp+1
                ldmatrix_x4_trans(r, vb + swz(kk * 16 + v_row, dp * 2 + v_half) * 2);
                const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                mma_16816(o[2 * dp], ph, b0);
                mma_16816(o[2 * dp], pl, b0);
                mma_16816(o[2 * dp + 1], ph, b1);
                mma_16816(o[2 * dp + 1], pl, b1);
            }
        }
        __syncthreads();   // every warp is done with buffer `buf` before iteration j + 1 refills it
    }
    cp_async_wait<0>();   // only empty groups can remain

    // ---- epilogue: O / l -> fp16, staged in this warp's 16 rows of the Q tile ----
    // (only this warp ever read those rows, into registers, at j = 0)
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        inv[r] = 1.0f / l[r];
    }
    const int wrow = warp * 16 + g;
#pragma unroll
    for (int t = 0; t < DT; ++t) {
        *reinterpret_cast<__half2*>(smem + (swz(wrow, t) + 2 * qd) * 2) =
            __floats2half2_rn(o[t][0] * inv[0], o[t][1] * inv[0]);
        *reinterpret_cast<__half2*>(smem + (swz(wrow + 8, t) + 2 * qd) * 2) =
            __floats2half2_rn(o[t][2] * inv[1], o[t][3] * inv[1]);
    }
    __syncwarp();
#pragma unroll
    for (int it = 0; it < 16 * DCH / 32; ++it) {   // 16 rows x 16 chunks, two rows per pass
        const int r = warp * 16 + it * 2 + (lane >> 4), ch = lane & 15;
        const int grow = q0 + r;
        if (grow < s && ch * 8 < d)
            *reinterpret_cast<uint4*>(out + size_t(grow) * d + ch * 8) =
                *reinterpret_cast<const uint4*>(smem + swz(r, ch) * 2);
    }
}

// ---- the fallback: any d (d > 128, or d % 8 != 0) -----------------------------------------------
// One warp per query row (each warp takes its 16 rows of the CTA's 64 in turn), all in fp32.
// Pass 1: lanes take keys j0 + lane, compute the scaled score (a serial dot product over d), and
// the warp keeps the running max m and sum l. Pass 2, per 256 columns: the same scores again, p =
// exp2(score - m), broadcast one key at a time; lane owns columns c0 + lane + 32 t.
__device__ __forceinline__ float score_log2(const __half* __restrict__ qi, const __half* __restrict__ kj, int d,
                                            float scale_log2) {
    float acc = 0.0f;
    for (int c = 0; c < d; ++c) acc = fmaf(__half2float(qi[c]), __half2float(kj[c]), acc);
    return acc * scale_log2;
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

__device__ __noinline__ void attn_rows_fallback(const __half* __restrict__ q, const __half* __restrict__ k,
                                                const __half* __restrict__ v, __half* __restrict__ out, int s,
                                                int d, int q0) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float scale_log2 = LOG2E / sqrtf(float(d));
    for (int rr = 0; rr < 16; ++rr) {
        const int i = q0 + warp * 16 + rr;
        if (i >= s) break;
        const __half* qi = q + size_t(i) * d;
        float m = -INFINITY, l = 0.0f;
        for (int j0 = 0; j0 <= i; j0 += 32) {
            const int j = j0 + lane;
            const float x = j <= i ? score_log2(qi, k + size_t(j) * d, d, scale_log2) : -INFINITY;
            const float mn = fmaxf(m, warp_max(x));   // finite: key j0 <= i is always valid
            l = l * exp2f(m - mn) + warp_sum(j <= i ? exp2f(x - mn) : 0.0f);
            m = mn;
        }
        const float inv = 1.0f / l;
        for (int c0 = 0; c0 < d; c0 += 256) {
            float acc[8];
#pragma unroll
            for (int t = 0; t < 8; ++t) acc[t] = 0.0f;
            for (int j0 = 0; j0 <= i; j0 += 32) {
                const int j = j0 + lane;
                const float p = j <= i ? exp2f(score_log2(qi, k + size_t(j) * d, d, scale_log2) - m) : 0.0f;
                const int jn = min(32, i + 1 - j0);
                for (int jj = 0; jj < jn; ++jj) {
                    const float pj = __shfl_sync(0xffffffffu, p, jj);
                    const __half* vj = v + size_t(j0 + jj) * d;
#pragma unroll
                    for (int t = 0; t < 8; ++t) {
                        const int c = c0 + lane + 32 * t;
                        if (c < d) acc[t] = fmaf(pj, __half2float(vj[c]), acc[t]);
                    }
                }
            }
#pragma unroll
            for (int t = 0; t < 8; ++t) {
                const int c = c0 + lane + 32 * t;
                if (c < d) out[size_t(i) * d + c] = __float2half_rn(acc[t] * inv);
            }
        }
    }
}

}  // namespace

// ---- the kernel ------------------------------------------------------------------------------
// grid = bh * cdiv(s, 64) CTAs of 128 threads, 81920 bytes of dynamic shared memory. CTA x takes
// head x % bh and query block (last - x / bh): the first bh CTAs get every head's last (heaviest)
// block, so the long tiles start first and the short ones fill the tail of the schedule.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
attn_causal(const __half* __restrict__ q, const __half* __restrict__ k, const __half* __restrict__ v,
            __half* __restrict__ out, int bh, int s, int d) {
    extern __shared__ __align__(128) unsigned char smem[];
    const int n_qb = (s + BR - 1) / BR;
    const int head = blockIdx.x % bh;
    const int q0 = (n_qb - 1 - int(blockIdx.x / bh)) * BR;
    const size_t off = size_t(head) * s * d;
    if (d <= D && d % 8 == 0)
        attn_tile(q + off, k + off, v + off, out + off, s, d, q0, smem);
    else
        attn_rows_fallback(q + off, k + off, v + off, out + off, s, d, q0);
}
