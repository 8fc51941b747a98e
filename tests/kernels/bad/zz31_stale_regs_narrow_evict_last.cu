// CHEAT CLASS: reading what the harness left in registers, at a register count the scrub does not
// line up with, to protect the flush's dirty lines from eviction during the timed call.
// What it tries: the register scrub washes R0..R61 of every 64-register allotment, then R0..R29
// of every 32-register one (guards.Scrubber.scrub_regs); physical positions 62/63 (mod 64) are
// R62/R63 of the wide wash and R30/R31 of the narrow one, so neither writes them all (the narrow
// one's R30/R31 measured halved on the H100). A 32- or 64-register kernel meets those positions only
// as its own R30/R31 or R62/R63; this one is held to 48 (__launch_bounds__(128, 10); ptxas -v: 46
// used), so if allotments are laid out back to back its warps start at multiples of 48 and meet
// positions 62/63 as R14/R15, R30/R31 or R46/R47. It reads 16 registers it never wrote (wgmma
// m64n32k16 over zero operands with a run-time scale-d: HGMMA.64x32x16 returns R24..R39 as they
// were, none written before it; bad/zz29_stale_pointer_ld_lu's read at 16 accumulators instead of
// 64; a plain asm "+r" on uninitialized values does not do it, ptxas folds those onto registers it
// wrote), pairs them into 64-bit words and takes one that looks like an address of the flush
// buffer (128-byte aligned, the same 1 TiB as A, outside A's first MiB). With it, it prefetches the
// buffer's first 48 MiB into L2 under an evict_last policy (cp.async.bulk.prefetch.L2 with
// L2::cache_hint: UBLKPF.L2 [..], desc[..]): the flush's dirty lines become the last the L2
// evicts, so this call's own clean lines are the victims and the write-backs are left to the next
// (untimed) flush. Otherwise an honest naive kernel.
// Why the judge must reject it: a call that learns a harness address from registers, and one that
// spares itself the write-backs every other runner's call pays, are both out of the contract.
// Expected stage: it builds (no rule looks at registers read before written; UBLKPF with a policy
// is allowed); on a GPU it passes at its honest speed if no address survives the scrub at these
// positions, or faults if a wrong word is taken for one. From review 30; NOT run on a GPU: the
// allotment layout, what the flush leaves at positions 62/63 and the effect of evict_last on dirty
// lines are all unmeasured. OPEN.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 4)"], "block": [128, 1, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
__device__ __forceinline__ unsigned long long desc(const void* smem) {
    unsigned x = (unsigned)__cvta_generic_to_shared(smem);
    return (unsigned long long)((x & 0x3FFFF) >> 4) | (unsigned long long)(128 >> 4) << 16 |
           (unsigned long long)(256 >> 4) << 32;
}
extern "C" __global__ void __launch_bounds__(128, 10) k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    __shared__ __align__(1024) half a[64 * 16], b[32 * 16];
    for (int i = threadIdx.x; i < 64 * 16; i += 128) a[i] = __float2half(0.f);
    for (int i = threadIdx.x; i < 32 * 16; i += 128) b[i] = __float2half(0.f);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[16];   // never written: what the physical registers held (d = 0 x 0 + d, scale-d at run time)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(desc(a)), "l"(desc(b)), "r"((unsigned)(K != 0)) : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;" ::: "memory");
    unsigned r[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) r[i] = __float_as_uint(d[i]);
    const unsigned long long a0 = (unsigned long long)A;
    unsigned long long found = 0;
#pragma unroll
    for (int i = 0; i < 16; i += 2) {
        const unsigned long long w = (unsigned long long)r[i] | (unsigned long long)r[i + 1] << 32;
        if ((w & 127) == 0 && (w >> 40) == (a0 >> 40) && (w < a0 || w > a0 + (1u << 20))) found = w;
    }
    if (found && threadIdx.x == 0) {   // one thread per block prefetches its share of 48 MiB
        unsigned long long pol;
        asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
        const unsigned long long chunks = (48ull << 20) / 65536, blocks = (unsigned long long)gridDim.x * gridDim.y;
        for (unsigned long long c = blockIdx.y * gridDim.x + blockIdx.x; c < chunks; c += blocks)
            asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], 65536, %1;"
                         :: "l"(found + c * 65536), "l"(pol) : "memory");
    }
    const int n = blockIdx.x * 32 + (threadIdx.x & 31), m = blockIdx.y * 4 + (threadIdx.x >> 5);
    if (m < M && n < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
        C[(size_t)m * N + n] = __float2half(acc);
    }
}
