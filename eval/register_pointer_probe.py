"""Which 64-bit values that look like this process's device pointers a kernel finds in registers it
never wrote (wgmma with run-time scale-d over zero operands, as bad/zz26_stale_register_pointer.cu
reads them), after each harness step that can run before a candidate's call: the chip scrub, the L2
flush (which ends with a register scrub), the flush's kernels without that scrub, the register
scrub with and without its wide pass (64 registers a thread), and nothing.

Guarantees: each found value is printed with its offset from the known buffers (the flush buffer,
the operands, the output). Does not: run the judge; it reproduces the sequence with the harness's
own functions in one process.

    python eval/register_pointer_probe.py --out results/register_pointer_probe_h100_DATE.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

import cupy as cp
import numpy as np

from cudal2.harness import guards, rawkernels, timing

_SRC = r"""
#include <cuda_fp16.h>

__device__ __forceinline__ unsigned long long desc(const void* smem) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    return (unsigned long long)((a & 0x3FFFF) >> 4) | (unsigned long long)(128 >> 4) << 16 |
           (unsigned long long)(256 >> 4) << 32;
}
extern "C" __global__ void __launch_bounds__(128) probe(const __half* A, const __half* B, __half* C,
                                                        unsigned long long* out, const __grid_constant__ int K) {
    __shared__ __align__(1024) half a[64 * 16], b[128 * 16];
    for (int i = threadIdx.x; i < 64 * 16; i += 128) a[i] = __float2half(0.f);
    for (int i = threadIdx.x; i < 128 * 16; i += 128) b[i] = __float2half(0.f);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[64];
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(desc(a)), "l"(desc(b)), "r"((unsigned)(K != 0)) : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;" ::: "memory");
    const unsigned hi = (unsigned)((unsigned long long)C >> 32);
    const unsigned long long t = blockIdx.x * 128ull + threadIdx.x;
    if (t == 0) {   // the probe's own generic addresses: its shared memory, its parameters, its stack
        volatile int local = K;
        out[gridDim.x * 128ull * 32] = (unsigned long long)(const void*)a;
        out[gridDim.x * 128ull * 32 + 1] = (unsigned long long)(const void*)&K;
        out[gridDim.x * 128ull * 32 + 2] = (unsigned long long)(const void*)&local;
    }
#pragma unroll
    for (int i = 0; i < 64; i += 2) {
        const unsigned lo = __float_as_uint(d[i]), h = __float_as_uint(d[i + 1]);
        const unsigned long long p = ((unsigned long long)h << 32) | lo;
        // any value with this process's high word (its own shared memory's generic address
        // included: ptxas may compute it in registers the never-written d shares; see `own`)
        const bool hit = h == hi && lo != 0;
        out[t * 32 + i / 2] = hit ? p : 0ull;
    }
}
"""


def nvcc_probe():
    """The probe compiled as the judge compiles a candidate (nvcc, then ptxas -O3), not by NVRTC."""
    d = Path(tempfile.mkdtemp())
    (d / "p.cu").write_text("#include <cstdint>\n" + _SRC)
    subprocess.run(["nvcc", "-diag-suppress", "549", "-cubin", "-arch=sm_90a", "-O3", "-o", str(d / "p.cubin"), str(d / "p.cu")], check=True)
    return cp.RawModule(path=str(d / "p.cubin")).get_function("probe")


def run(step: str, A, B, C, out, flush, nvcc: bool) -> list[int]:
    probe = nvcc_probe() if nvcc else rawkernels.function(_SRC, "probe", ("-arch=sm_90a",))
    out.fill(0)   # first: its own registers hold `out`'s address
    if step in ("scrub", "scrub+flush", "scrub+flush-kernels"):
        guards.scrub()
    if step == "scrub+flush":
        timing.flush_l2(flush)          # ends with guards.scrub_regs()
    if step == "scrub+flush-kernels":   # the flush as it was before the register scrub was added
        f, dsc = (rawkernels.function(timing._FLUSH_SRC, n) for n in ("cudal2_flush_l2", "cudal2_discard_l2"))
        f((1056,), (256,), (flush, np.int64(flush.nbytes // 16), np.uint64(0)))
        dsc((1056,), (256,), (flush, np.int64(flush.nbytes // 128)))
        flush.fill(0)
    if step == "regs":                  # the register scrub alone, right after a kernel that held `out`
        guards.scrub_regs()
    if step == "regs-narrow":           # the register scrub as it was before its wide pass (R0..R29 only)
        sc = guards._the_scrubber()
        sc.uniform((2 * sc.sms,), (1024,), (guards.new_key(), np.uint64(0)))
        sc.regs((2 * sc.sms,), (1024,), (guards.new_key(), np.uint64(0)))
    if step == "probe":                 # the probe right after itself (its own leftovers)
        probe(((out.size - 3) // 32 // 128,), (128,), (A, B, C, out, np.int32(64)))
        out.fill(0)
        guards.scrub_regs()
    probe(((out.size - 3) // 32 // 128,), (128,), (A, B, C, out, np.int32(64)))
    cp.cuda.runtime.deviceSynchronize()
    v = cp.asnumpy(out)
    run.own = [int(x) for x in v[-3:]]
    v = v[:-3]
    return [int(x) for x in v[v != 0]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    A = cp.ones(1 << 20, dtype=cp.float16)
    B = cp.ones(1 << 20, dtype=cp.float16)
    flush = cp.empty(100 << 20, dtype=cp.uint8)
    C = cp.zeros(1 << 20, dtype=cp.float16)
    out = cp.zeros(325 * 128 * 32 + 3, dtype=cp.uint64)   # + the probe's own shared, parameter and local addresses
    known = {"flush": flush.data.ptr, "flush_end": flush.data.ptr + flush.nbytes, "A": A.data.ptr,
             "B": B.data.ptr, "C": C.data.ptr, "out": out.data.ptr}
    rows = []
    for nvcc, step in [(n, s) for n in (False, True) for s in ["none", "regs-narrow", "regs", "probe", "scrub", "scrub+flush-kernels", "scrub+flush"]]:
        found = run(step, A, B, C, out, flush, nvcc)
        known.update(zip(("own_shared", "own_param", "own_local"), run.own))
        uniq = sorted(set(found))
        near = {hex(u): min(((k, u - p) for k, p in known.items()), key=lambda kv: abs(kv[1])) for u in uniq[:40]}
        rows.append({"compiler": "nvcc" if nvcc else "nvrtc", "step": step, "hits": len(found), "distinct": len(uniq), "nearest_known": near})
        print("nvcc" if nvcc else "nvrtc", step, len(found), len(uniq), list(near.items())[:6], flush=True)
    a.out.write_text(json.dumps({"known": {k: hex(v) for k, v in known.items()}, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
