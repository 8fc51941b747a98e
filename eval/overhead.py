"""Host cost per eager call: `cudal2.linear` against `F.linear`, on the GPU machine, fresh process.

  python eval/overhead.py --out FILE.json

For a served shape and an unserved one (the vendor's, through the library), the host time per call
of 20000 back-to-back calls (perf_counter around the loop, the GPU kept behind by the queue, the
device synchronized at the end: the loop is host-bound at these sizes) in paired rounds. Nothing is
asserted: a measurement for eval/README.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

import cudal2
from cudal2.library import Library, layers
from cudal2.resources import resource


def per_call_us(f, n: int) -> float:
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        f()
    t = time.perf_counter() - t
    torch.cuda.synchronize()
    return t / n * 1e6


def _py_frame(x, w, bias=None):
    return torch.nn.functional.linear(x, w, bias)


def _py_is_compiling(x, w, bias=None):
    if not torch.compiler.is_compiling():
        return torch.nn.functional.linear(x, w, bias)
    return None


def main(out: Path) -> None:
    lib = Library(resource("kernels_out") / "sm90")
    cudal2.library._default = lib
    e = min((x for x in lib.served if x.binary), key=lambda x: x.M * x.N * x.K)
    rows = {}
    for label, (M, N, K) in (("served " + e.id, (e.M, e.N, e.K)), ("unserved 96x96x96", (96, 96, 96)),
                             ("unserved 512x1024x1024", (512, 1024, 1024))):
        x = torch.randn(M, K, device="cuda", dtype=torch.float16)
        w = torch.randn(N, K, device="cuda", dtype=torch.float16)
        F = torch.nn.functional
        ext = lib.compiled()
        paths = {   # what a call costs on the host, from F.linear up to the library's own front door
            "F_linear": lambda: F.linear(x, w),
            "py_frame": lambda: _py_frame(x, w),               # any Python API's floor: one more frame
            "py_is_compiling": lambda: _py_is_compiling(x, w),  # the frame plus torch.compile's check
            "cpp_front": lambda: ext.front(x, w, None),        # the dispatcher's pybind front door
            "py_linear": lambda: layers.linear(x, w),           # the Python function (its short way)
            "cudal2_linear": lambda: cudal2.linear(x, w),       # the public API: the builtin door
        }
        for f in paths.values():
            per_call_us(f, 2000)
        runs = {k: [] for k in paths}
        for _ in range(7):   # interleaved rounds: drifts in the host's speed hit every path alike
            for k, f in paths.items():
                runs[k].append(per_call_us(f, 20000))
        med = {k: statistics.median(v) for k, v in runs.items()}
        rows[label] = {"us_per_call": med, "extra_us_vs_F_linear": {k: v - med["F_linear"] for k, v in med.items()},
                       "stats": lib.stats()}
    print(json.dumps(rows, indent=1))
    out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    main(ap.parse_args().out)
