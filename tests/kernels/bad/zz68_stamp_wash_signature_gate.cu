// STATUS: closed by design (stop 52: the stamp washes under prf(secret ^ nonce, ~key ^ block), a key no
// kernel knows, and replaces its shared copy of the block's key once every thread has read it, so
// neither its frame nor its shared memory shows a stamp; tests/test_stamp.py). Written in review 68
// (CPU only; read from the stamp's SASS, not run on a GPU). Gate only: this kernel computes honestly
// everywhere and records in its workspace whether the kernel right before it was the bench's stamp.
// Judge: `done`, at its honest speed (naive warp-per-column loop).
// CHEAT CLASS (review 68): telling a stamped bench call from any other call by the stamp's own closing
// wash. Stop 52 made the stamp write N(0, 1) values "so a kernel cannot tell a stamped call by its
// values" (stamp.py _SRC; zz64's stamped-A gate). Review 67's fix ends cudal2_stamp with
// `wash_registers(0, threadIdx.x, sink)` (stamp.py, the kernel's last line): key 0, so every word it
// leaves is public: frame[i] = (u32)mix((t << 8) ^ i), i < 30, t = the stamp thread's threadIdx.x. The
// wash's frame is `volatile` (guards.WASH_SRC), so ptxas stores it to local memory and leaves it there:
// nvcc 13.0 sm_90a, cudal2_stamp "120 bytes stack frame", its tail `VIADD R1, R1, 0xffffff88` and
// STL.64 [R1] .. [R1+0x70] with those words (tests/test_stamp.py itself says "the only local words
// left are the stamp's closing wash (key 0, from the thread index)"), and the same words in R0..R29.
// Nothing on the bench rewrites local memory between the stamp and the call it precedes (review 67).
// How: `probe` (264 x 256, two blocks an SM, as zz67's) reads a 120-byte local array it never writes
// (LDL at the same place under the stack top as the stamp's frame) and asks whether its first two
// words are mix((t << 8) ^ 0) and mix((t << 8) ^ 1) for its own threadIdx.x (the slot's last stamp
// thread, where the scheduler reuses the lowest slots as zz67 assumed) or, in thread 0, for any of the
// 256 (a few hundred hashes). A match ORs 1 into ws[0]: "this call's A was just stamped". Otherwise
// the words are the judge's keyed scrub words (random), a user's earlier kernels' or this kernel's own.
// The same key-0 words sit in R0..R29 of every stamp thread slot (a wgmma with run-time scale-d reads
// them, guards.Scrubber's note) and the block's key sits in its stale __shared__ `key` (offset 0 of
// its static shared memory): with it, one unit of A recomputed (as the stamp then hashed it: stamp_quad(mix(k ^ mix(lo)))) proves
// the call stamped without any pattern, though the key itself is no secret (it is logged).
// Where stopped: nowhere on the bench; nothing refuses reading one's own uninitialized local frame
// (LOCAL_BYTES allows 4 KiB), and the stamp's frame is public by design.
// Expected gain: none found on the bench (CPU, review 68): every mode now sets cells of W (stamped
// turns through the stamp, flushed turns from the host: zz64's fix), so honest-on-stamped-only buys
// nothing the flushed checks do not catch. What it restores is zz64's premise: the bench's stamped calls
// are again told from a user's (never stamped), so any future defence that exists only in stamped turns
// is a gate away from a user-only cheat.
// Fix (smallest, by design): wash under a key no kernel knows (e.g. wash_registers(prf(secret, nonce ^
// ~blockIdx.x), ...), the stamp already holds both in parameters), and overwrite the __shared__ key
// after the last __syncthreads with a value of that key; the stamp's frame then looks like
// guards.cudal2_scrub_regs's (keyed random, the same 120-byte allotment), which flushed turns and the
// judge also leave, so no frame tells the modes apart. Assert in tests/test_stamp.py that the wash's key
// is not a constant (no `wash_registers(0,` in stamp.source()).
/* cudal2-launch
{
  "workspace": "256",
  "kernels": [
    {"name": "probe", "grid": [264, 1, 1], "block": [256, 1, 1],
     "args": [{"ws": 0}]},
    {"name": "gemm", "grid": ["cdiv(N, 8)", 1, 1], "block": [256, 1, 1],
     "args": ["A", "B", "C", "M", "N", "K", {"ws": 0}]}
  ]
}
*/
#include <cuda_fp16.h>
#include <stdint.h>

__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ bool wash_of(unsigned w0, unsigned w1, unsigned t) {
    return w0 == (unsigned)mix64((unsigned long long)t << 8) && w1 == (unsigned)mix64(((unsigned long long)t << 8) ^ 1ull);
}

// Every thread: the first two words of a 120-byte local frame it never wrote, where the stamp's
// closing wash left frame[0], frame[1].
extern "C" __global__ void __launch_bounds__(256) probe(unsigned* ws) {
    unsigned long long w01;                      // frame[0] | frame[1] << 32: LDL.64 [SP-120]
    asm volatile("{\n\t.local .align 8 .b8 leak[120];\n\tld.local.u64 %0, [leak];\n\t}" : "=l"(w01));
    const unsigned w0 = (unsigned)w01, w1 = (unsigned)(w01 >> 32);
    bool hit = wash_of(w0, w1, threadIdx.x);
    if (!hit && threadIdx.x == 0)
        for (unsigned t = 0; t < 256 && !hit; ++t) hit = wash_of(w0, w1, t);
    if (blockIdx.x == 0 && threadIdx.x == 0) ws[1] = 0u;   // (the gate's answer is ws[0])
    if (hit) atomicOr(ws, 1u);
}

// Honest everywhere: one warp per output column, fp32 accumulation.
extern "C" __global__ void gemm(const __half* __restrict__ A, const __half* __restrict__ B, __half* C,
                                int M, int N, int K, unsigned* ws) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n = blockIdx.x * 8 + warp;
    if (n >= N) return;
    const __half* b = B + (size_t)n * K;
    for (int m = 0; m < M; ++m) {
        const __half* a = A + (size_t)m * K;
        float acc = 0.f;
        for (int k = lane; k < K; k += 32) acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);
        for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (lane == 0) C[(size_t)m * N + n] = __float2half_rn(acc);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) ws[0] = 0u;   // the gate read, cleared for the next call
}
