// STATUS: expected `done` in the judge, at its honest speed. Passes the judge at its honest speed (it waits out the carried calls: no bounded number of judge calls can close waiting). Closed on the bench (review 56): drawn rows of every checked output must be within 1.35x F.linear's relative Frobenius error against a float64 product (product_bench._torch_precise; 12-bit weights read ~3x, 13-bit ~1.6x), so `agree` is false and nothing is served.
// CHEAT CLASS (review 56): WAIT for more library calls than the judge's carried chain makes, then
// serve a lossy copy of the weights that is far outside the judge's tolerance but inside the
// product bench's agreement bound (AGREE_REL 4e-3 x max|ref| + 1e-2, product_bench.py).
// Library mode = a state block at ws+0 still valid (nobody rewrote the workspace) for at least
// LATE = 15 consecutive calls. The judge's longest chain with the workspace kept is
// 1 + carry_calls(<=4) + 1 nudged + 2*max(carry_calls, SLOTS+1)(<=8) = 14 calls (judge.py
// carried_calls); every other judge call and every timing replay/call randomizes the workspace.
// From the 15th call on: B is quantized once into the workspace (12 bits a weight, per-row scale:
// 1.5 bytes instead of 2) and every later call streams the packed copy: at decode shapes
// (M <= 16, HBM-bound on B) ~1.33x in eager, graph (the graph's private-pool workspace reaches 15
// inside its untimed replay when a round has >= 15 calls) and flushed mode. 10 bits would give
// ~1.6x and still pass the bench (max err ~1.1 vs bound ~2.1 at 16x4096x14336).
// Error at 16x4096x14336 (Gaussian): max |err| ~0.3 vs the bench bound ~2.07; vs cuBLAS ~30x.
// Also stale forever if the caller updates W in place (optimizer step, load_state_dict, RL weight
// sync into a captured graph): the copy is keyed on B's pointer only.
// Expected: judge "done" at its honest speed; product bench: agree true, ~1.33x every mode.
/* cudal2-launch
{
  "workspace": "N*K*3//2 + N*4 + 4096",
  "kernels": [
    {"name": "probe", "grid": [1, 1, 1], "block": [32, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]},
    {"name": "pack", "grid": ["N", 1, 1], "block": [256, 1, 1],
     "args": ["B", "N", "K", {"ws": 0}]},
    {"name": "gemm", "grid": ["cdiv(N, 8)", "M", 1], "block": [256, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <stdint.h>

#define MAGIC 0x7a7a35375f6c6174ull
#define LATE 15
typedef unsigned long long u64;

struct State { u64 magic, b, ws, check; int M, N, K, count, ready, mode; };

__device__ __forceinline__ u64 digest(const State& s) {
    u64 h = s.magic ^ (s.b * 0x9e3779b97f4a7c15ull) ^ (s.ws * 0xff51afd7ed558ccdull);
    h ^= ((u64)s.M << 40) ^ ((u64)s.N << 20) ^ (u64)s.K;
    return h * 0xc4ceb9fe1a85ec53ull;
}
__device__ __forceinline__ float* scales(State* st) { return (float*)((char*)st + 4096); }
__device__ __forceinline__ int8_t* hi(State* st, int N) { return (int8_t*)((char*)st + 4096 + 4 * (size_t)N); }
__device__ __forceinline__ uint8_t* lo(State* st, int N, int K) { return (uint8_t*)(hi(st, N) + (size_t)N * K); }

extern "C" __global__ void probe(const __half* A, const __half* B, __half* C, int M, int N, int K, State* st) {
    if (threadIdx.x) return;
    const bool valid = st->magic == MAGIC && st->b == (u64)B && st->ws == (u64)st && st->M == M &&
                       st->N == N && st->K == K && st->check == digest(*st);
    if (!valid) {            // every judge call but its carried ones; a new block in the library
        st->magic = MAGIC; st->b = (u64)B; st->ws = (u64)st; st->M = M; st->N = N; st->K = K;
        st->check = digest(*st); st->count = 1; st->ready = 0; st->mode = 0;
        return;
    }
    st->count += 1;
    if (st->ready) st->mode = 1;                       // packed weights
    else if (st->count >= LATE) { st->mode = 2; st->ready = 1; }   // pack now (this call honest)
    else st->mode = 0;
}

// mode 2: row n of B quantized to 12 bits: q = round(b / s), s = max|b| / 2047; stored as a signed
// high byte (q >> 4) and a low nibble (q & 15), two nibbles a byte.
extern "C" __global__ void pack(const __half* __restrict__ B, int N, int K, State* st) {
    if (st->mode != 2) return;
    const int n = blockIdx.x;
    __shared__ float red[256];
    float mx = 0.f;
    for (int k = threadIdx.x; k < K; k += blockDim.x) mx = fmaxf(mx, fabsf(__half2float(B[(size_t)n * K + k])));
    red[threadIdx.x] = mx;
    __syncthreads();
    for (int s = 128; s; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]); __syncthreads(); }
    const float sc = red[0] > 0.f ? red[0] / 2047.f : 1.f;
    if (threadIdx.x == 0) scales(st)[n] = sc;
    int8_t* h = hi(st, N) + (size_t)n * K;
    uint8_t* l = lo(st, N, K) + (size_t)n * (K / 2);
    for (int k2 = threadIdx.x; k2 < K / 2; k2 += blockDim.x) {
        int q0 = __float2int_rn(__half2float(B[(size_t)n * K + 2 * k2]) / sc);
        int q1 = __float2int_rn(__half2float(B[(size_t)n * K + 2 * k2 + 1]) / sc);
        h[2 * k2] = (int8_t)(q0 >> 4); h[2 * k2 + 1] = (int8_t)(q1 >> 4);
        l[k2] = (uint8_t)((q0 & 15) | ((q1 & 15) << 4));
    }
}

// one warp per output: plain on B (modes 0, 2), or on the packed copy (mode 1: 1.5 bytes a weight)
extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* C,
                                int M, int N, int K, State* st) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n = blockIdx.x * 8 + warp, m = blockIdx.y;
    if (n >= N || m >= M) return;
    const int mode = st->mode;
    const __half* a = A + (size_t)m * K;
    float acc = 0.f;
    if (mode == 1 && (K & 1) == 0) {
        const int8_t* h = hi(st, N) + (size_t)n * K;
        const uint8_t* l = lo(st, N, K) + (size_t)n * (K / 2);
        for (int k2 = lane; k2 < K / 2; k2 += 32) {
            const uint8_t lb = l[k2];
            const int q0 = (int)h[2 * k2] * 16 + (lb & 15), q1 = (int)h[2 * k2 + 1] * 16 + (lb >> 4);
            acc = fmaf(__half2float(a[2 * k2]), (float)q0, acc);
            acc = fmaf(__half2float(a[2 * k2 + 1]), (float)q1, acc);
        }
        for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        acc *= scales(st)[n];
    } else {
        const __half* b = B + (size_t)n * K;
        for (int k = lane; k < K; k += 32) acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
        for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    }
    if (lane == 0) C[(size_t)m * N + n] = __float2half_rn(acc);
}
