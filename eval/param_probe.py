"""Can a kernel read other launches' parameters through the address of its own __grid_constant__
parameter (PTX cvta.param, which TMA kernels need and the cubin check therefore allows)?

A marker kernel is launched with a distinctive 64-bit value among its parameters (as the judge
launches its check kernels with their keys); then a probe kernel reads WINDOW words on either side
of its own parameter's generic address and reports where the marker appears. Run on the GPU
machine; prints and writes JSON (--out). Nothing is asserted: a finding for the closing note.
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
    print(json.dumps(result, indent=1))
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
