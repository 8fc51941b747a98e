// Can a kernel read what an earlier launch left in the register file? (eval/register_probe.py)
// `leave` holds REG_WORDS marker words live at once in every thread slot it occupies, so they sit
// in its registers when it exits. `peek` never writes its wgmma accumulators and runs wgmma with
// scale-d on over zero operands: D = (whatever the registers held) + 0, stored to `out`.
// tests/test_register_probe.py checks on the CPU that ptxas emits HGMMA reading registers no
// instruction of `peek` wrote.
#include <cuda_fp16.h>

// Two macros, not one "1024, 2": nvcc's -D splits its value at commas.
#ifndef LEAVE_THREADS
#define LEAVE_THREADS 1024
#endif
#ifndef LEAVE_BLOCKS
#define LEAVE_BLOCKS 2
#endif
#ifndef REG_WORDS
#define REG_WORDS 30
#endif

__device__ __forceinline__ unsigned long long mix(unsigned long long z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// The register scrub's shape (guards.cudal2_scrub_regs): REG_WORDS values, none foldable, all
// candidates of one select at the end, so ptxas gives them distinct registers (R0..R29 at 32).
// Each holds the marker's high half and low byte (MARK_MASK: 24 bits, so a word of random bits
// matches by chance once in 2^24, not once in 2^16) around a middle byte that varies by thread
// and word (so ptxas cannot fold the words into one).
extern "C" __global__ void __launch_bounds__(LEAVE_THREADS, LEAVE_BLOCKS) leave(unsigned marker, unsigned* sink) {
    volatile unsigned frame[REG_WORDS];
    const unsigned long long t = ((unsigned long long)blockIdx.x << 10) | threadIdx.x;
    for (int i = 0; i < REG_WORDS; ++i) frame[i] = (marker & 0xFFFF00FFu) | ((unsigned)mix((t << 8) ^ i) & 0xFF00u);
    unsigned v[REG_WORDS];
#pragma unroll
    for (int i = 0; i < REG_WORDS; ++i) v[i] = frame[i];
#pragma unroll
    for (int i = REG_WORDS - 1; i >= 0; --i) frame[i] = v[i];
    if (frame[(unsigned)t % REG_WORDS] == 0u && sink) sink[0] = 1u;
}

__device__ __forceinline__ unsigned long long desc(const void* smem) {
    // no swizzle; 8x8 core matrices 128 B apart along K (leading) and 256 B apart along M/N (stride)
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    return (unsigned long long)((a & 0x3FFFF) >> 4) | (unsigned long long)(128 >> 4) << 16 |
           (unsigned long long)(256 >> 4) << 32;
}

extern "C" __global__ void __launch_bounds__(128) peek(unsigned scale_d, unsigned* out) {
    __shared__ __align__(1024) half a[64 * 16], b[32 * 16];
    for (int i = threadIdx.x; i < 64 * 16; i += 128) a[i] = __float2half(0.f);
    for (int i = threadIdx.x; i < 32 * 16; i += 128) b[i] = __float2half(0.f);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[16];   // never written: what the registers held
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(desc(a)), "l"(desc(b)), "r"(scale_d) : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;" ::: "memory");
    unsigned* o = out + ((size_t)blockIdx.x * 128 + threadIdx.x) * 16;
#pragma unroll
    for (int i = 0; i < 16; ++i) o[i] = __float_as_uint(d[i]);
}
