"""Is the parameter bank at a fixed distance from the local or shared window? (fourteenth review)

A candidate may form the local window's base (`cvta.local` of 0: the allowed driver word at 0x20)
and the shared window's, and add a constant; no rule follows those values. If the parameter bank's
generic address (what 0x198 holds) sits at a fixed distance from either, across launches, kernels
and processes, that constant reaches %gridid and the other driver words with no read of 0x198.
This prints, per launch, param - local and param - shared for two kernels with different
parameter lists (a constant distance is a hole: tests/kernels/probe/window_offset_gridid.cu then
needs it filled in, and must fail).

  python eval/window_probe.py --out FILE.json [--launches 8]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import cupy as cp
import numpy as np

SRC = r"""
__device__ void where(const void* param, unsigned long long* out) {
    // the address of a __grid_constant__ parameter is its generic address in the parameter bank
    unsigned long long p = (unsigned long long)param, l, s;
    asm volatile("cvta.local.u64 %0, %1;" : "=l"(l) : "l"(0ull));
    asm volatile("cvta.shared.u64 %0, %1;" : "=l"(s) : "l"(0ull));
    out[0] = p; out[1] = l; out[2] = s;
}
extern "C" __global__ void small(const __grid_constant__ unsigned long long tag, unsigned long long* out) {
    if (threadIdx.x == 0) where(&tag, out);
}
typedef unsigned long long u64;
extern "C" __global__ void large(u64 x0, u64 x1, u64 x2, u64 x3, const __grid_constant__ u64 tag, u64* out) {
    if (threadIdx.x == 0 && x0 != 1) where(&tag, out);
}
"""


def main(out: Path, launches: int) -> None:
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    rows = []
    buf = cp.zeros(3, dtype=cp.uint64)
    for i in range(launches):
        for name in ("small", "large"):
            fn = mod.get_function(name)
            args = (np.uint64(i), buf) if name == "small" else (*(np.uint64(0),) * 4, np.uint64(i), buf)
            fn((1 + i,), (32,), args)
            p, lo, sh = (int(x) for x in buf.get())
            rows.append({"kernel": name, "launch": i, "param": hex(p), "param_minus_local": p - lo,
                         "param_minus_shared": p - sh})
            print(rows[-1], flush=True)
    for key in ("param_minus_local", "param_minus_shared"):
        print(key, "distinct values:", len({r[key] for r in rows}))
    out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--launches", type=int, default=8)
    a = ap.parse_args()
    main(a.out, a.launches)
