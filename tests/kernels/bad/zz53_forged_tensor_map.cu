// CHEAT CLASS: a TMA descriptor the harness did not make -- forged from the kernel's own {"int"}
// arguments (review 53, from the static review).
// What it tries: thirty-two `int` arguments, each a constant the spec chooses, fill 128 bytes of
// the parameter bank at a 64-byte boundary (0x240..0x2bf), laid out as a CUtensorMap: global
// address, dims, strides, box, swizzle, L2 promotion and any undocumented bits all the
// candidate's. The kernel names the first of them as a descriptor (mov of k_param_9's address,
// cvta.param, cp.async.bulk.tensor). The PTX rule saw a parameter's own address named by a TMA
// instruction and passed it; the machine-code rule (paramflow) asks only that a descriptor be the
// parameter bank's address plus a constant. Here the TMA sits under K < 0 (never taken): the file
// shows the build, not a gain on the GPU (where a forged descriptor's fields could reach is what
// zz31's refused policy bits and zz_tmap_cache_counter were about).
// Closed at both layers: the PTX rule lets a TMA instruction name only a parameter of 128 bytes (a
// tensor map, as the harness passes each {"tmap"} argument), and the machine-code rule (paramflow)
// carries the constant added to the parameter bank's address and asks that it be the offset of one
// of the kernel's 128-byte parameters (their offsets from the cubin's KPARAM_INFO records).
// Expected: build.
/* cudal2-launch
{
  "kernels": [
    {"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1], "smem": 0,
     "args": ["A", "B", "C", "M", "N", "K", {"int": "0"}, {"int": "0"}, {"int": "0"},
      {"int": "4096"}, {"int": "4097"}, {"int": "4098"}, {"int": "4099"}, {"int": "4100"}, {"int": "4101"}, {"int": "4102"}, {"int": "4103"}, {"int": "4104"}, {"int": "4105"}, {"int": "4106"}, {"int": "4107"}, {"int": "4108"}, {"int": "4109"}, {"int": "4110"}, {"int": "4111"}, {"int": "4112"}, {"int": "4113"}, {"int": "4114"}, {"int": "4115"}, {"int": "4116"}, {"int": "4117"}, {"int": "4118"}, {"int": "4119"}, {"int": "4120"}, {"int": "4121"}, {"int": "4122"}, {"int": "4123"}, {"int": "4124"}, {"int": "4125"}, {"int": "4126"}, {"int": "4127"}]}
  ]
}
*/
#include <cuda_fp16.h>

extern "C" __global__ void k(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
                             int M, int N, int K, int p0, int p1, int p2, int f0, int f1, int f2, int f3, int f4, int f5, int f6, int f7, int f8, int f9, int f10, int f11, int f12, int f13, int f14, int f15, int f16, int f17, int f18, int f19, int f20, int f21, int f22, int f23, int f24, int f25, int f26, int f27, int f28, int f29, int f30, int f31) {
    __shared__ alignas(128) __half tile[64 * 64];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned sbar = (unsigned)__cvta_generic_to_shared(&bar), stile = (unsigned)__cvta_generic_to_shared(tile);
    if (threadIdx.x == 0 && threadIdx.y == 0 && K < 0) {   // (never taken in a real call: the PoC is about the build)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sbar));
        asm volatile("{\n .reg .u64 pa, ga;\n mov.u64 pa, k_param_9;\n cvta.param.u64 ga, pa;\n"
                     " cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [ga, {%1, %2}], [%3];\n}"
                     :: "r"(stile), "r"(0), "r"(0), "r"(sbar) : "memory");
    }
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __half* a = A + (size_t)m * K;
    const __half* b = B + (size_t)n * K;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(a[kk]), __half2float(b[kk]), acc);
    C[(size_t)m * N + n] = __float2half_rn(acc + (K < 0 ? __half2float(tile[n & 63]) : 0.0f));
}
