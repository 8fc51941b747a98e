// probe_util.cuh: what the stand-alone TMA probes in eval/ (bstream_probe.cu, feed_probe.cu) share:
// checked CUDA and driver calls, the mbarrier wait, the stage ring (its barriers and the consumer's
// release), a fill with random data (never zeros), the 2-D tensor map a GEMM loads [box_rows][64]
// fp16 tiles with (128-byte swizzle), and a median timer.
//
// Guarantees: every wrapped call exits with file and line on failure; `median_us` warms up first
// and times each call alone with events on the default stream. Does not: verify any data.
#pragma once
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CKD(x) do { CUresult e_ = (x); if (e_ != CUDA_SUCCESS) { const char* s_; cuGetErrorString(e_, &s_); fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, s_); exit(1); } } while (0)

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

// The probes' shared-memory ring: STAGES stages of `stage_bytes` from a 1024-byte aligned base (the
// 128-byte swizzle needs it), then full[STAGES] and empty[STAGES] mbarriers of one arrival each.
// Every thread of the block calls it (it ends in __syncthreads).
struct Ring {
    unsigned char* base;
    uint64_t* full;
    uint64_t* empty;
};

__device__ __forceinline__ Ring ring_init(unsigned char* raw, int stages, int stage_bytes) {
    Ring r;
    r.base = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
    r.full = reinterpret_cast<uint64_t*>(r.base + stages * stage_bytes);
    r.empty = r.full + stages;
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(r.full + s)) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(r.empty + s)) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    return r;
}

// The consumer warp's turn at stage s: wait until it has landed, read one word a lane (so the
// load is not dead), release it to the producer; returns the word
__device__ __forceinline__ unsigned ring_consume(const Ring& r, int s, uint32_t parity, int stage_bytes, int lane) {
    mbar_wait(smem_u32(r.full + s), parity);
    const unsigned v = reinterpret_cast<const unsigned*>(r.base + s * stage_bytes)[lane];
    __syncwarp();
    if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(r.empty + s)) : "memory");
    return v;
}

// values in [-1, 1] in steps of 1e-3 from a hash of the index: random enough to keep the chip's
// power (and so its clock) where real data keeps it
__global__ void fill(__half* b, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        unsigned x = unsigned(i) * 2654435761u ^ seed;
        x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
        b[i] = __float2half((int(x % 2001) - 1000) * 1e-3f);
    }
}

// rows x K fp16, K contiguous; box [box_rows][64]
static CUtensorMap make2d(const void* b, int rows, int K, int box_rows) {
    CUtensorMap m;
    cuuint64_t dims[2] = {cuuint64_t(K), cuuint64_t(rows)}, strides[1] = {cuuint64_t(K) * 2};
    cuuint32_t box[2] = {64, cuuint32_t(box_rows)}, es[2] = {1, 1};
    CKD(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(b), dims, strides, box, es,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return m;
}

// median of `reps` event-timed calls of `launch` after 3 warm-ups, in microseconds
template <class F>
static double median_us(F launch, int reps = 15) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int w = 0; w < 3; ++w) launch();
    std::vector<float> t;
    for (int r = 0; r < reps; ++r) {
        CK(cudaEventRecord(e0));
        launch();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2] * 1e3;
}
