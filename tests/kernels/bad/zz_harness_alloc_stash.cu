// CLASS: a stash in harness memory that no check covers (the cuBLASLt workspace the judge keeps,
// unarmed snapshot rows, the guards' small arrays), reached by adding a constant to an operand's
// address. A real attack would keep a directory of the replay's sets there and compute every set
// in the first call of the next replay; this shows only the stash read and write. Builds. OPEN,
// not measured on a GPU: the distance is a guess (the worker pads the address space by a random
// number of pages first), and a wrong guess is an illegal address. Should fail at a verification
// stage (a fault) or pass gaining nothing.
/* cudal2-launch
{"workspace": "256",
 "kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 4)"], "block": [128, 1, 1],
  "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]}]}
*/
#include <cuda_fp16.h>
#include <cstdint>
#define STASH_DELTA (-(64ll << 20))   // guessed distance from the 2 MiB page below A
#define MAGIC 0x5eed5eed5eed5eedull
extern "C" __global__ void __launch_bounds__(128) k(const __half* A, const __half* B, __half* C, int M, int N, int K,
                                                    unsigned long long* ws) {
    unsigned long long* stash = (unsigned long long*)((((uintptr_t)A) & ~((uintptr_t)(2u << 20) - 1)) + STASH_DELTA);
    __shared__ int seen;
    if (threadIdx.x == 0) seen = stash[0] == MAGIC && stash[1] == (uintptr_t)C;
    __syncthreads();
    const int n = blockIdx.x * 32 + (threadIdx.x & 31), m = blockIdx.y * 4 + (threadIdx.x >> 5);
    if (!(seen && (m & 63) == 63) && m < M && n < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
        C[(size_t)m * N + n] = __float2half(acc);
    }
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) { stash[0] = MAGIC; stash[1] = (uintptr_t)C; }
}
