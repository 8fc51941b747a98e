"""Is the parameter bank at a fixed distance from the local or shared window? (fourteenth review)

A candidate may form the local window's base (`cvta.local` of 0: the allowed driver word at 0x20)
and the shared window's, and add a constant; no rule follows those values. If the parameter bank's
generic address (what 0x198 holds) sits at a fixed distance from either, across launches, kernels
and processes, that constant reaches %gridid and the other driver words with no read of 0x198.
This prints, per launch, param - local, param - shared and param - global (a cupy allocation the
kernel is given: every kernel knows its operands' addresses) for two kernels with different
parameter lists (a constant distance is a hole: tests/kernels/probe/window_offset_gridid.cu then
needs it filled in, and must fail).

  python eval/window_probe.py --out FILE.json [--launches 8] [--processes 6] [--perturb]

First run (2026-11-23, H100): within a process the distance takes 8 values (the bank is a ring of
8 slots 64 KiB apart that launches cycle through); across 3 processes, two shared one local
distance and all three differed from the shared window.
"""

from __future__ import annotations

import argparse
import json
import mmap
import secrets
import subprocess
import sys
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


def probe(launches: int, pad: bool = False, global_mib: int = 0) -> list[dict]:
    if pad:   # what the judge's worker does first: a random number of 2 MiB pages, kept
        from cudal2.harness.buffers import pad_address_space
        pad_address_space()
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    rows = []
    # the operand whose address is measured: small, or as large as a big shape's arena
    buf = cp.zeros(max(3, global_mib << 17), dtype=cp.uint64)
    for i in range(launches):
        for name in ("small", "large"):
            fn = mod.get_function(name)
            args = (np.uint64(i), buf) if name == "small" else (*(np.uint64(0),) * 4, np.uint64(i), buf)
            fn((1 + i,), (32,), args)
            p, lo, sh = (int(x) for x in buf[:3].get())   # the kernel writes the first three words
            rows.append({"kernel": name, "launch": i, "param": hex(p), "param_minus_local": p - lo,
                         "param_minus_shared": p - sh, "param_minus_global": p - int(buf.data.ptr)})
    return rows


def reserve_random() -> mmap.mmap:
    """A PROT_NONE anonymous mapping of random size (0-4 GiB in 64 KiB steps) made before CUDA
    starts: does it move the driver's mappings relative to each other? (the worker could do this)"""
    size = (secrets.randbelow(1 << 16) + 1) << 16
    # prot 0 is PROT_NONE (the mmap module names only READ/WRITE/EXEC): address space, no memory
    return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)


def main(out: Path, launches: int, processes: int, perturb: bool, pad: bool, global_mib: int) -> None:
    per = []
    for _ in range(processes):
        cmd = [sys.executable, __file__, "--child", "--launches", str(launches), *(["--perturb"] if perturb else []),
               *(["--pad"] if pad else []), "--global-mib", str(global_mib)]
        per.append(json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1]))
    summary = {}
    for key in ("param_minus_local", "param_minus_shared", "param_minus_global"):
        within = [len({r[key] for r in rows}) for rows in per]
        bases = [min(r[key] for r in rows) for rows in per]   # the ring's first slot, per process
        summary[key] = {"distinct_within_each_process": within, "base_per_process": bases,
                        "distinct_bases": len(set(bases)),
                        "most_common_base_share": max(bases.count(b) for b in bases) / len(bases)}
        print(key, json.dumps(summary[key]))
    out.write_text(json.dumps({"processes": processes, "launches": launches, "perturb": perturb, "pad": pad, "global_mib": global_mib,
                               "summary": summary, "rows": per}, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--launches", type=int, default=8)
    ap.add_argument("--processes", type=int, default=6, help="fresh processes, one CUDA context each")
    ap.add_argument("--perturb", action="store_true", help="each process first reserves a random-size address range")
    ap.add_argument("--pad", action="store_true", help="each process first pads the device address space as the "
                    "judge's worker does (buffers.pad_address_space)")
    ap.add_argument("--global-mib", type=int, default=0, help="the measured operand's size (0: 24 bytes)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        keep = reserve_random() if a.perturb else None
        print(json.dumps(probe(a.launches, a.pad, a.global_mib)))
    else:
        main(a.out, a.launches, a.processes, a.perturb, a.pad, a.global_mib)
