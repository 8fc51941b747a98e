"""Can a kernel read other launches' parameters through the address of its own __grid_constant__
parameter (PTX cvta.param, which TMA kernels need and the cubin check therefore allows)?

A marker kernel is launched with a distinctive 64-bit value among its parameters (as the judge
launches its check kernels with their keys); then a probe kernel reads WINDOW words on either side
of its own parameter's generic address and reports where the marker appears. Run on the GPU
machine; prints and writes JSON (--out). It also stores through that address (does the store fault? does the value survive into the next
launch, or the next replay of a graph?). Nothing is asserted: a finding for the closing note.
"""

from __future__ import annotations

import argparse
import json

import cupy as cp
import numpy as np

MARK = 0xFEEDFACE12345678
SRC = r"""
typedef unsigned long long u64;
extern "C" __global__ void marker(u64 a, u64 b, u64 c, u64* sink) { if (a == b + c && sink) sink[0] = a; }
// A store through the same generic address: does it fault, and does what it wrote survive into
// the next launch (eager) or the next replay of a graph (a state channel past every scrub)?
extern "C" __global__ void pwrite(const __grid_constant__ u64 own, u64* out, u64 mark) {
    u64* p = (u64*)&own;
    out[0] = p[0];
    p[0] = mark;
    __threadfence();
    out[1] = p[0];
}
extern "C" __global__ void probe(const __grid_constant__ u64 own, u64* out, long long window) {
    const u64* p = &own;                       // a generic address into parameter space
    for (long long i = threadIdx.x; i < 2 * window; i += blockDim.x) out[i] = p[i - window];
    if (threadIdx.x == 0) out[2 * window] = (u64)p;
}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="param_probe.json")
    ap.add_argument("--window", type=int, default=512, help="words read on each side")
    args = ap.parse_args()
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    marker, probe = mod.get_function("marker"), mod.get_function("probe")
    result: dict = {"window_words": args.window}
    for how in ("before", "after_enqueued"):
        out = cp.zeros(2 * args.window + 1, dtype=cp.uint64)
        if how == "before":
            for _ in range(64):
                marker((1,), (1,), (np.uint64(MARK), np.uint64(1), np.uint64(2), np.uint64(0)))
            cp.cuda.runtime.deviceSynchronize()
        try:
            probe((1,), (256,), (np.uint64(0xABCD), out, np.int64(args.window)))
            if how == "after_enqueued":   # a launch queued behind the probe, as a check behind a call
                marker((1,), (1,), (np.uint64(MARK), np.uint64(1), np.uint64(2), np.uint64(0)))
            cp.cuda.runtime.deviceSynchronize()
            v = out.get()
            hits = [int(i) - args.window for i in np.nonzero(v[:-1] == np.uint64(MARK))[0]]
            result[how] = {"ok": True, "own_address": hex(int(v[-1])), "own_found_at_0": bool(v[args.window] == 0xABCD),
                           "marker_offsets_words": hits, "nonzero_words": int(np.count_nonzero(v[:-1]))}
        except Exception as e:  # noqa: BLE001  a fault is a finding too (the window is not mapped)
            result[how] = {"ok": False, "error": str(e)[:300]}
            break
    result["write"] = write_probe()
    print(json.dumps(result, indent=1))
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


_WRITE_JOB = r"""
import json, sys
import cupy as cp, numpy as np
sys.path.insert(0, sys.argv[1])
from param_probe import SRC
mod = cp.RawModule(code=SRC, options=("-std=c++17",))
k = mod.get_function("pwrite")
res = {}
out = cp.zeros(2, dtype=cp.uint64)
seen = []
for i in range(2):
    k((1,), (1,), (np.uint64(0x1111), out, np.uint64(0xBEEF0 + i)))
    cp.cuda.runtime.deviceSynchronize()
    seen.append([hex(int(x)) for x in out.get()])
res["eager"] = {"before_write, after_write per launch": seen,
                "persists": seen[1][0] == hex(0xBEEF0)}
s = cp.cuda.Stream(non_blocking=True)
with s:
    s.begin_capture()
    k((1,), (1,), (np.uint64(0x2222), out, np.uint64(0xCAFE)))
    g = s.end_capture()
    seen = []
    for i in range(2):
        g.launch(s)
        s.synchronize()
        seen.append([hex(int(x)) for x in out.get()])
res["graph"] = {"before_write, after_write per replay": seen, "persists": seen[1][0] == hex(0xCAFE)}
print("JSON" + json.dumps(res))
"""


def write_probe() -> dict:
    """The store experiment in a process of its own (a fault there leaves this one usable)."""
    import os
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", _WRITE_JOB, os.path.dirname(os.path.abspath(__file__))],
                       capture_output=True, text=True, timeout=120)
    line = [x for x in r.stdout.splitlines() if x.startswith("JSON")]
    if line:
        return json.loads(line[0][4:])
    return {"faulted_or_failed": True, "rc": r.returncode, "stderr": r.stderr[-600:]}


if __name__ == "__main__":
    main()
