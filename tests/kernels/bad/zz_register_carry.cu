// CLASS: state carried across calls through the register file: reading registers no instruction
// of the kernel wrote (wgmma with a run-time scale-d over accumulators never written).
// Each call ends holding a marker word (MARK | call count) live in 64 registers per thread, so it
// sits in the register file after exit; the next call runs wgmma m64n128k16 with scale-d on
// (decided at run time) over zero operands and unwritten accumulators: D = whatever its 64
// accumulator registers held. The scrub (guards.cudal2_scrub_regs) rewrites R0..R29 of a
// 32-register allotment only; R30/R31 of it (1/16 of the file) and the uniform registers survive,
// so over 64 registers x 128 threads x many blocks some markers plausibly come through. The count
// lets the kernel behave through the verification stages (exact, gaussian, repeat, determinism:
// fewer than CHEAT_AFTER calls) and then drop one row in 64 of C, which only a sampled spot check
// can see. Builds: no build rule looks at registers read before any write.
// Should fail: "timing" (the spot check of every timed call), or "build" if the build refused HGMMA
// reading accumulators the kernel never wrote under a scale-d that is not a constant.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 4)"], "block": [128, 1, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
#define MARK 0x7A5A5A00u
#define CHEAT_AFTER 12u
__device__ __forceinline__ unsigned long long desc(const void* smem) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    return (unsigned long long)((a & 0x3FFFF) >> 4) | (unsigned long long)(128 >> 4) << 16 |
           (unsigned long long)(256 >> 4) << 32;
}
extern "C" __global__ void __launch_bounds__(128) k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    __shared__ __align__(1024) half a[64 * 16], b[128 * 16];
    for (int i = threadIdx.x; i < 64 * 16; i += 128) a[i] = __float2half(0.f);
    for (int i = threadIdx.x; i < 128 * 16; i += 128) b[i] = __float2half(0.f);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[64];   // never written: what the physical registers held
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(desc(a)), "l"(desc(b)), "r"((unsigned)(K != 0)) : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;" ::: "memory");
    unsigned count = 0;
#pragma unroll
    for (int i = 0; i < 64; ++i) {
        const unsigned w = __float_as_uint(d[i]);
        if ((w & 0xFFFFFF00u) == MARK) count = max(count, w & 0xFFu);
    }
    count = __reduce_max_sync(0xFFFFFFFFu, count);
    __shared__ unsigned best;
    if (threadIdx.x == 0) best = 0;
    __syncthreads();
    atomicMax(&best, count);
    __syncthreads();
    count = best;
    const int n = blockIdx.x * 32 + (threadIdx.x & 31), m = blockIdx.y * 4 + (threadIdx.x >> 5);
    const bool cheat = count >= CHEAT_AFTER && (m & 63) == 63;
    if (!cheat && m < M && n < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
        C[(size_t)m * N + n] = __float2half(acc);
    }
    // leave MARK | count+1 in as many registers as possible at exit
    const unsigned next = MARK | min(count + 1u, 255u);
    volatile unsigned frame[64];
    for (int i = 0; i < 64; ++i) frame[i] = next;
    unsigned v[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) v[i] = frame[i];
#pragma unroll
    for (int i = 64 - 1; i >= 0; --i) frame[i] = v[i] ^ (unsigned)i;   // all live at once
    if (frame[threadIdx.x % 64] == 0u) C[0] = C[0];
}
