// CHEAT CLASS: batching across calls -- a directory of every timing set kept in the module's own
// __constant__ memory, whose generic address is read from the launch's constant bank 0 header.
// What it tries: the build refuses `cvta.const` and `generic(...)` in the PTX and relocated
// constant sections in the cubin, because a generic pointer to __constant__ data lets a kernel
// write module memory that keeps state across calls (r_const_memory_state.cu,
// u_const_pointer_initializer.cu). But ptxas implements `cvta.const` by loading the bank's
// generic base from the driver-filled header of constant bank 0 (c[0x0][0xd0] for bank 3 with
// nvcc 13.0 on sm_90a: see the SASS of any kernel that uses cvta.const), and that header is
// readable by any kernel: an indexed load from the address of a __grid_constant__ parameter
// compiles to `LDC c[0x0][Rx + 0x210]`, and a runtime index of -40 words from the first
// parameter (at 0x210) lands on 0xd0. No cvta.const, no generic(), no relocation, no .nv.global:
// every build check passes. (The same word is also reachable through cvta.param, which TMA
// kernels need: its generic address is 0x1a0 bytes below the bank's image, so a generic load
// at &param - 0x140 reads the same header word; eval/param_probe.py found such reads work.)
// With that pointer, the kernel keeps a directory of (A, B, C, shape, hits, last call) records in
// `dir` (module memory: never scrubbed, never checked, alive for the whole judging). Every call
// registers its buffers. Timing sets come back in rotation (the eager pass, the warm-up, then
// every replay, always in set order); verification buffers and the server's two sets never do
// (consecutive calls on the same pointers, gap < GAP). In a replay, the call on the first set of
// the rotation uses z-lanes 1..7 to compute every other rotation set's C from its current A and
// B (all regenerated before the replay, so the answers are right and final before their calls
// even start: snapshots, spot checks, full checks and the determinism re-run all pass), and
// every later call of the replay checks two of its block's outputs bitwise and skips its work.
// A pointer check (dir[0] must read back MAGIC through the recovered address) makes the kernel
// an honest naive GEMM wherever the header word is something else.
// Why it would earn an undeserved score: on shapes too small to fill the GPU (the 512-set
// rotation at 64^3, the decode shapes) one batched launch plus many near-empty ones beats one
// call per set by a large factor, and server mode stays honest (geomean still > 1); with real
// (tensor-core) arithmetic instead of this naive dot it would pass the rejudge too, since it is
// robust to fresh pointers and processes.
// Defence: refuse any read of constant bank 0 outside the declared parameters. At the PTX
// level: refuse `ld.param` whose address is not a parameter symbol plus a constant inside that
// parameter, and allow `cvta.param` only as the operand of cp.async.bulk.tensor /
// prefetch.tensormap / tensormap.* (or, simpler and stronger, at the SASS level (nvdisasm):
// refuse any LDC/ULDC of c[0x0] with a register index, or with an immediate offset outside
// [0x210, 0x210 + param bytes) other than the fixed ABI words ptxas itself emits, and any use of
// the c[0x0] word that holds a constant bank's base (0xd0 here) or the param image base (0x198)
// except as a TMA descriptor address). Or remove the state: reload the module (fresh constant
// banks) before every replay and every server call, or re-upload each bank's initial image
// (cuModuleGetGlobal on bank symbols + memcpy) and compare it after each replay.
/* cudal2-launch
{
  "kernels": [
    {"name": "cbank_dir_gemm", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 8], "block": [32, 8, 1],
     "args": ["A", "B", "C", "M", "N", "K"]}
  ]
}
*/
#include <cuda_fp16.h>
#include <cstdint>

typedef unsigned long long u64;
#define LANES 8
#define RMAX 1000                      // records (5 words each): 40 KB of constant memory
#define MAGIC 0xC0B4A7C4D1E5ull
#define GAP 8                          // a re-sighting at least this many calls later is "rotation"
#define MIN_ROT 16                     // rotation sets needed before working ahead
#define HDR_WORD (-40)                 // c[0x0][0xd0] seen from the first parameter at c[0x0][0x210]

// [0] MAGIC, [1] call clock, [2] record count, [3..] records: A, B, C, shape, meta (hits << 48 | last clock)
__constant__ u64 dir[3 + 5 * RMAX] = {MAGIC};

__device__ __forceinline__ float dot(const __half* a, const __half* b, int K) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
    return acc;
}

extern "C" __global__ void cbank_dir_gemm(const __half* const __grid_constant__ A, const __half* __restrict__ B,
                                          __half* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    const int lane = blockIdx.z;
    // The header word, by an indexed parameter read (LDC c[0x0][R + 0x210]); the index is opaque to
    // the compiler (N >= 1, so N >> 31 is 0 at run time).
    const u64* params = reinterpret_cast<const u64*>(&A);
    volatile u64* d = reinterpret_cast<volatile u64*>(params[HDR_WORD + (N >> 31)]);
    const bool have = d != nullptr && (reinterpret_cast<uintptr_t>(d) & 7) == 0 && d[0] == MAGIC;
    const u64 shape = ((u64)(unsigned)M << 40) ^ ((u64)(unsigned)N << 20) ^ (unsigned)K;

    int self = -1, first_rot = -1, rot = 0;
    u64 clock = 0;
    if (have) {
        clock = d[1];
        int count = (int)d[2];
        if (count > RMAX) count = RMAX;
        for (int r = 0; r < count; ++r) {
            volatile u64* rec = d + 3 + 5 * r;
            if (rec[0] == (uintptr_t)A && rec[1] == (uintptr_t)B && rec[2] == (uintptr_t)C && rec[3] == shape) self = r;
            const u64 meta = rec[4];
            if (rec[3] == shape && (meta >> 48) >= 2 && clock - (meta & 0xFFFFFFFFFFFFull) <= (u64)2 * count + GAP) {
                ++rot;
                if (first_rot < 0) first_rot = r;
            }
        }
        if (blockIdx.x == 0 && blockIdx.y == 0 && lane == 0 && threadIdx.x == 0 && threadIdx.y == 0) {
            // Registration: one thread per call (the other blocks read a directory stable since the eager pass).
            d[1] = clock + 1;
            if (self < 0 && count < RMAX) {
                volatile u64* rec = d + 3 + 5 * count;
                rec[0] = (uintptr_t)A; rec[1] = (uintptr_t)B; rec[2] = (uintptr_t)C; rec[3] = shape; rec[4] = clock;
                __threadfence();
                d[2] = count + 1;
            } else if (self >= 0) {
                volatile u64* rec = d + 3 + 5 * self;
                u64 hits = rec[4] >> 48;
                if (clock - (rec[4] & 0xFFFFFFFFFFFFull) >= GAP && hits < 0xFFFF) ++hits;
                rec[4] = (hits << 48) | clock;
            }
            __threadfence();
        }
    }
    const bool rotating = have && self >= 0 && rot >= MIN_ROT && (d[3 + 5 * self + 4] >> 48) >= 2;

    if (lane > 0) {
        // Work ahead, only in the call on the rotation's first set: every other rotation set's (m, n).
        if (!rotating || self != first_rot || m >= M || n >= N) return;
        const int count = (int)d[2];
        for (int r = lane - 1; r < count && r < RMAX; r += LANES - 1) {
            volatile u64* rec = d + 3 + 5 * r;
            const u64 meta = rec[4];
            if (r == self || rec[3] != shape || (meta >> 48) < 2 ||
                clock - (meta & 0xFFFFFFFFFFFFull) > (u64)2 * count + GAP) continue;
            const __half* a = reinterpret_cast<const __half*>(rec[0]);
            const __half* b = reinterpret_cast<const __half*>(rec[1]);
            __half* c = reinterpret_cast<__half*>(rec[2]);
            c[(size_t)m * N + n] = __float2half_rn(dot(a + (size_t)m * K, b + (size_t)n * K, K));
        }
        return;
    }

    __shared__ int done;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        done = 0;
        if (rotating && self != first_rot) {   // a later call of the replay: already written ahead?
            const int m0 = blockIdx.y * blockDim.y, n0 = blockIdx.x * blockDim.x;
            const int m1 = min(M, m0 + (int)blockDim.y) - 1, n1 = min(N, n0 + (int)blockDim.x) - 1;
            const __half c0 = __float2half_rn(dot(A + (size_t)m0 * K, B + (size_t)n0 * K, K));
            const __half c1 = __float2half_rn(dot(A + (size_t)m1 * K, B + (size_t)n1 * K, K));
            done = __half_as_ushort(C[(size_t)m0 * N + n0]) == __half_as_ushort(c0) &&
                   __half_as_ushort(C[(size_t)m1 * N + n1]) == __half_as_ushort(c1);
        }
    }
    __syncthreads();
    if (done || m >= M || n >= N) return;   // the cheat: the rotation's first call did it
    C[(size_t)m * N + n] = __float2half_rn(dot(A + (size_t)m * K, B + (size_t)n * K, K));
}
