// CLASS: a per-launch identity from the parameter bank's generic address (c[0x0][0x198]), through
// the coordinates of a TMA load; and a PTX-rule bypass: a guard written with a space (`@ q`).
// 1. cubin.param_address_violations strips guards with `@!?%?[\w$]+\s+`, which does not match
//    `@ q cvta.param.u64 %rd, %zero;`; ptxas accepts it. The statement's opcode is then "@", so
//    neither the cvta.param rule nor the parameter-space rule sees it, and no parameter is named:
//    a register holds the parameter bank's generic address (offset 0) outside any class.
// 2. paramflow lets that value through UIADD3 with every register source tainted (x + x, so 23
//    doublings = lo << 23, since ptxas keeps each PTX add) and R2UR/UMOV, into a UTMALDG's
//    bracketed coordinates, which it does not judge. A TMA load of A's tile at row (lo << 23)
//    gets A's data when the address's low 9 bits are 0 and zeros (out of bounds) otherwise: a bit
//    of the address reaches shared memory, and from there anything. If the driver places each
//    launch's parameters in a ring of slots (the address varies per launch), that is a %gridid
//    substitute; here it selects doing a quarter of the rows (as z_gridid_parity.cu).
// UNVERIFIED on a GPU (whether 0x198 varies per launch, and which bit). SASS seen: ULDC.64 UR6,
// c[0x0][0x198]; UIADD3 UR4, UR6, UR6, URZ ... UIADD3 UR11, UR4, UR4, URZ; UTMALDG.2D [UR8], [UR6].
// Expected: "build" (the PTX guard pattern should accept `@ q` / `@ !q`, or refuse a space after
// `@`; and a TMA coordinate or shared address computed from the address should be refused).
/* cudal2-launch
{"kernels": [{"name": "k", "grid": ["cdiv(N, 32)", "cdiv(M, 8)"], "block": [32, 8, 1],
  "args": ["A", "B", "C", "M", "N", "K", {"tmap": "A", "box": [16, 16], "swizzle": 0}]}]}
*/
#include <cuda_fp16.h>
#include <cuda.h>
extern "C" __global__ void k(const __half* A, const __half* B, __half* C, int M, int N, int K,
                             const __grid_constant__ CUtensorMap tmA) {
  __shared__ alignas(128) __half tile[16 * 16];
  __shared__ alignas(8) unsigned long long bar;
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned tid = threadIdx.y * 32 + threadIdx.x;
  const unsigned sb = (unsigned)__cvta_generic_to_shared(&bar), st = (unsigned)__cvta_generic_to_shared(tile);
  if (tid == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sb) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (tid == 0) {
    unsigned long long g = 0;
    // the guard written `@ q` hides the statement from the PTX parameter rule
    asm volatile("{.reg .pred q; setp.eq.u32 q, 1, 1;\n@ q cvta.param.u64 %0, %1;}" : "+l"(g) : "l"(0ull));
    int row;   // lo << 23: row 0 (A's data) when the address's low 9 bits are 0, else out of bounds (zeros)
    asm volatile("{.reg .b32 r; cvt.u32.u64 r, %1;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "add.u32 r, r, r;\n" "mov.b32 %0, r;}" : "=r"(row) : "l"(g));   
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 512;" :: "r"(sb) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(st), "l"(&tmA), "r"(0), "r"(row), "r"(sb) : "memory");
  }
  asm volatile("{.reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0; @!p bra W;}" :: "r"(sb) : "memory");
  int nz = 0;
  for (int i = 0; i < 256; ++i) nz |= __half_as_ushort(tile[i]) & 0x7fff;
  const bool id = nz != 0;   // a bit of the launch's parameter-bank address
  if (m >= M || n >= N || (id && (m & 3) != 0)) return;
  float acc = 0.0f;
  for (int kk = 0; kk < K; ++kk) acc = fmaf(__half2float(A[(size_t)m * K + kk]), __half2float(B[(size_t)n * K + kk]), acc);
  C[(size_t)m * N + n] = __float2half(acc);
}
