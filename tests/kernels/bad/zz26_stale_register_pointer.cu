// CLASS: learning a harness address from the physical registers. Before every candidate call the
// harness runs its own kernels after the chip scrub (timing.hold in server mode, flush_l2's flush,
// discard and fill, and before a replay the snapshot arming's randomize): their loop registers hold
// the flush buffer's, the hold flag's or a snapshot row's address at exit. A kernel reads registers
// it never wrote through a wgmma with a run-time scale-d over zero operands (as zz_register_carry
// does) and keeps pairs that look like pointers of this process (the high word of its own C
// pointer, 16-byte aligned, more than 256 MiB from C, so not its own arena's). Once it has such an address it can reach
// harness memory that no check reads (zz26_stale_flush_pointer_discard used the flush buffer's).
// PROBE: it writes an honest output unless it found such a pair; then each CTA that found one spoils
// one output, so the judge stops it at verification (or, in a replay, at its spot checks). 'done' says no harness pointer reached its registers.
// MECHANISM closed by: a register scrub (guards.scrub_regs) as the last harness kernel before every
// call and replay (the end of timing.flush_l2 and of Snapshots.arm).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 4)"], "block": [128, 1, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
#include <cstdint>
__device__ __forceinline__ unsigned long long desc(const void* smem) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    return (unsigned long long)((a & 0x3FFFF) >> 4) | (unsigned long long)(128 >> 4) << 16 |
           (unsigned long long)(256 >> 4) << 32;
}
extern "C" __global__ void __launch_bounds__(128) k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    __shared__ __align__(1024) half a[64 * 16], b[128 * 16];
    __shared__ unsigned long long low;
    for (int i = threadIdx.x; i < 64 * 16; i += 128) a[i] = __float2half(0.f);
    for (int i = threadIdx.x; i < 128 * 16; i += 128) b[i] = __float2half(0.f);
    if (threadIdx.x == 0) low = ~0ull;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[64];   // never written: what the physical registers held (the flush kernels' values)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(desc(a)), "l"(desc(b)), "r"((unsigned)(K != 0)) : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;" ::: "memory");
    const unsigned hi = (unsigned)((uintptr_t)C >> 32);
    unsigned long long mine = ~0ull;
#pragma unroll
    for (int i = 0; i < 64; i += 2) {
        const unsigned lo = __float_as_uint(d[i]), h = __float_as_uint(d[i + 1]);
        const unsigned long long p = ((unsigned long long)h << 32) | lo;
        // a pointer of this process, 16-byte aligned, far from this call's own C (not its own arena)
        if (h == hi && (lo & 15u) == 0 && (p > (uintptr_t)C + (256ull << 20) || p + (256ull << 20) < (uintptr_t)C))
            mine = min(mine, p);
    }
    atomicMin(&low, mine);
    __syncthreads();
    const bool found = low != ~0ull;   // a harness pointer reached this CTA's registers
    const int n = blockIdx.x * 32 + (threadIdx.x & 31), m = blockIdx.y * 4 + (threadIdx.x >> 5);
    if (m < M && n < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
        C[(size_t)m * N + n] = __float2half(found && threadIdx.x == 0 ? acc + 1.0f : acc);
    }
}
