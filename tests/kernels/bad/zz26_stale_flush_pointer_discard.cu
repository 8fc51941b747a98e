// CLASS: telling nothing apart, but learning a harness address from the registers of the harness's own
// kernels that run AFTER the scrub: every candidate call (verification and timing) follows
// scrub_chip -> [timing.hold, server mode] -> flush_l2 (cudal2_flush_l2, cudal2_discard_l2, then the
// buffer's fill(0)). Those kernels leave the L2 flush buffer's address (x + i, x + i*128 at loop exit,
// i.e. at or just past the buffer's end) and, in server mode, the pinned hold flag's address in the
// physical registers, and nothing rewrites them before the candidate runs. A kernel reads registers
// it never wrote through wgmma with a run-time scale-d (as zz_register_carry does), keeps 64-bit
// pairs that look like device pointers of this process (the high word of its own C pointer, 128-byte
// aligned), and takes the smallest as the flush buffer's end. It then issues discard.global.L2 over
// the buffer's tail below it: the fill(0) left up to a whole L2 of dirty zero lines there, which every
// runner's timed call otherwise pays to write back as its own data evicts them (the flush's stated
// model: "the L2 then holds dirty lines of unrelated data"). Discarded, they are never written back;
// memory holds zeros already (earlier flushes wrote them), so check_harness_buffers' count_nonzero
// sees nothing. The GEMM itself is honest (naive, one thread per output).
// MECHANISM: judge.Judge.call / fresh + timing.server / flush_l2 run harness kernels between the
// scrub and the call. Builds (no build rule reads registers read before any write, and discard is
// an allowed instruction). Expected on the GPU: "done" (honest output) at roughly naive_v2's speed at
// the suite's tiny shape, where the call evicts < 1 MB of dirty lines and the gain is nil; a fault at
// "exact" if a pointer it picks is not the flush buffer's. What would show the hole: at a
// memory-bound shape (e.g. 16x8192x8192, B = 128 MB) the same kernel with DISCARD 1 against DISCARD 0
// in server mode; a higher ratio with DISCARD 1 means a candidate shifts the flush's write-back cost
// out of its own timed region. FIX (proposed, not made: it moves server-mode timings): rewrite the
// registers after the last harness kernel before a candidate call (a register-only scrub at the end
// of flush_l2 / after the hold), so no harness address reaches a candidate's unwritten registers.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 4)"], "block": [128, 1, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
#include <cstdint>
#define DISCARD 1
#define TAIL_BYTES (24ull << 20)   // the flush buffer's tail discarded below its end (< L2/2: stays inside)
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
        // a pointer of this process, line-aligned, far from this call's own C (not its own arena)
        if (h == hi && (lo & 127u) == 0 && (p > (uintptr_t)C + (256ull << 20) || p + (256ull << 20) < (uintptr_t)C))
            mine = min(mine, p);
    }
    atomicMin(&low, mine);
    __syncthreads();
    const unsigned long long end = low;
    if (DISCARD && end != ~0ull && end > TAIL_BYTES) {
        // this CTA's share of the tail: lines spread over the grid so the whole tail goes once
        const unsigned long long lines = TAIL_BYTES / 128, ctas = (unsigned long long)gridDim.x * gridDim.y;
        const unsigned long long cta = blockIdx.y * (unsigned long long)gridDim.x + blockIdx.x;
        const unsigned long long base = (end & ~127ull) - TAIL_BYTES;
        for (unsigned long long l = cta * 128 + threadIdx.x; l < lines; l += ctas * 128)
            asm volatile("discard.global.L2 [%0], 128;" :: "l"(base + l * 128) : "memory");
    }
    const int n = blockIdx.x * 32 + (threadIdx.x & 31), m = blockIdx.y * 4 + (threadIdx.x >> 5);
    if (m < M && n < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
        C[(size_t)m * N + n] = __float2half(acc);
    }
}
