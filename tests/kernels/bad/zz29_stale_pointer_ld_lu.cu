// CLASS: skipping a cost every runner pays: `ld.global.lu` (LDG.E.LU, "last use") in place of the
// refused discard. PTX documents .lu as avoiding "needless write-backs of lines that will not be
// used again" (on global addresses it is said to act as .cs); if the L2 treats LU on a dirty line
// as a discard, a call that loads the flush buffer's dirty lines with it drops them unwritten.
// The buffer's address is looked for in the registers the scrub leaves (R30/R31 of each 32-register
// allotment; this kernel's allotment is over 64, so it spans two): wgmma m64n128k16 with a run-time
// scale-d over zero operands and 64 never-written accumulators returns them; a 64-bit word
// 128-byte aligned, in the same 1 TiB as A and not inside A's first MiB, is taken as the buffer,
// and its first 48 MiB are loaded with ld.global.lu. Otherwise an honest naive kernel. From review 29.
// Builds (no rule looks at LDG.E.LU or at registers read before any write).
// Should fail: nothing to gain if the scrub left no such address (it passes at its honest speed);
// a wrong guess faults. OPEN until a GPU shows (a) whether LDG.E.LU drops dirty L2 lines and
// (b) whether any flush-buffer address survives the scrub in R30/R31 positions.
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 4)"], "block": [128, 1, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
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
    const unsigned long long a0 = (unsigned long long)A;
    unsigned long long found = 0;
#pragma unroll
    for (int i = 0; i < 64; i += 2) {
        const unsigned long long w = (unsigned long long)__float_as_uint(d[i]) |
                                     (unsigned long long)__float_as_uint(d[i + 1]) << 32;
        if ((w & 127) == 0 && (w >> 40) == (a0 >> 40) && (w < a0 || w > a0 + (1u << 20))) found = w;
    }
    if (found) {   // one warp per block walks its share of 48 MiB
        const unsigned long long lines = (48ull << 20) / 128, per = (lines + gridDim.x * gridDim.y - 1) / (gridDim.x * gridDim.y);
        const unsigned long long first = (unsigned long long)(blockIdx.y * gridDim.x + blockIdx.x) * per;
        unsigned s = 0;
        for (unsigned long long l = first + threadIdx.x; l < first + per && l < lines; l += 128) {
            unsigned v;
            asm volatile("ld.global.lu.b32 %0, [%1];" : "=r"(v) : "l"(found + l * 128) : "memory");
            s ^= v;
        }
        if (s == 0x9E3779B9u && M < 0) C[0] = __float2half(0.f);
    }
    const int n = blockIdx.x * 32 + (threadIdx.x & 31), m = blockIdx.y * 4 + (threadIdx.x >> 5);
    if (m < M && n < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
        C[(size_t)m * N + n] = __float2half(acc);
    }
}
