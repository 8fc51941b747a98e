// CHEAT CLASS: memory-descriptor bits no documented hint sets, a whole hand-made word.
// What it tries: PTX labels may begin with `%` (and may have spaces before their colon); the
// statement rules stripped only `[\w$]+:` labels, so `%Lw: ld.local.v2.u64 {x, pol}, [buf]`
// read as an opcode `%Lw:` whose first operand was `ld.local.v2.u64 {x`: the vector's second
// name, `pol`, lost that definition and kept only its createpolicy one. The word stored to `buf`
// is made in C, eviction code 0x1E (which createpolicy never emits); on sm_90a (nvcc 13.0) ptxas
// forwards it without local memory: desc[UR4] = {K < 0, 0x1ef00000} (`UMOV UR5, 0x1ef00000`,
// `R2UR UR4, R5`). Loads a guessed flush buffer below A under it. Otherwise an honest naive kernel.
// Why the judge must reject it: the descriptor is the driver's or createpolicy's; a hand-made one
// issues loads with undocumented behaviour (bad/zz31_handmade_descriptor_cvt faulted on the H100).
// Expected stage: build (the statement rules refuse a statement they cannot read, and read labels
// as ptxas does).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)", 1], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K"]}]}
*/
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    const size_t tid = (size_t)(blockIdx.y * gridDim.x + blockIdx.x) * 256 + threadIdx.y * 32 + threadIdx.x;
    const char* guess = (const char*)A - (size_t)100 * 1024 * 1024;
    const unsigned long long word = (0x1EFull << 52) | (unsigned long long)(K < 0);
    unsigned s = 0;
    if (tid < (size_t)100 * 1024 * 1024 / 128)
        asm volatile("{\n.reg .b64 pol, x;\n.local .align 16 .b8 buf[16];\n"
                     "createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
                     "st.local.v2.u64 [buf], {%2, %2};\n"
                     "%%Lw: ld.local.v2.u64 {x, pol}, [buf];\n"
                     "ld.global.L2::cache_hint.b32 %0, [%1], pol;\n}"
                     : "=r"(s) : "l"(guess + tid * 128), "l"(word) : "memory");
    const int n = blockIdx.x * 32 + threadIdx.x, m = blockIdx.y * 8 + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
    if (s == 0x9E3779B9u && M < 0) acc = 0.0f;   // keeps the load
    C[(size_t)m * N + n] = __float2half_rn(acc);
}
