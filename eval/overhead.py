"""Host cost per eager call: `cudal2.linear` against `F.linear`, on the GPU machine, fresh process.

  python eval/overhead.py --out FILE.json

For a served shape, unserved ones (the vendor's, through the library) and an (N, K) served at a
small M called at an M it is not served at (with a plain and a `cudal2.patch`ed nn.Linear on a
3-D input under inference_mode, as a model's layer: what `patch` routes to the vendor), the host
time per call of 20000 back-to-back calls (perf_counter around the loop, the GPU kept behind by
the queue, the device synchronized at the end: the loop is host-bound at these sizes; for a
GPU-bound served sm90raw entry at M of 100-256, 300 calls a round, fewer than the launch queue
holds) in paired rounds. Nothing is asserted: a measurement for eval/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from pathlib import Path

import torch

import cudal2
from cudal2.library import Library, layers
from cudal2.resources import resource


def per_call_us(f, n: int) -> float:
    """Host µs per call of n back-to-back calls (the GPU synchronized before, and after, untimed)."""
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
    routed = min(((m, x.N, x.K) for x in lib.served for m in (128, 256, 512)   # the smallest: host-bound
                  if x.M <= 16 and lib.lookup(m, x.N, x.K) is None), key=lambda s: s[1] * s[2], default=None)
    shapes = [("served " + e.id, (e.M, e.N, e.K)), ("unserved 96x96x96", (96, 96, 96)),
              ("unserved 512x1024x1024", (512, 1024, 1024))]
    mid = min((x for x in lib.served if x.binary and x.m_range is None and 100 <= x.M <= 256 and x.family == "sm90raw"),
              key=lambda x: x.M * x.N * x.K, default=None)
    if mid:   # a GPU-bound served call: fewer calls a round, so the launch queue never fills and blocks the host
        shapes.append(("served, GPU-bound " + mid.id, (mid.M, mid.N, mid.K)))
    if routed:   # an (N, K) served at a small M, called at an M it does not serve: what `patch` routes to the vendor
        shapes.append(("routed to the vendor %dx%dx%d" % routed, routed))
    for label, (M, N, K) in shapes:
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
        if label.startswith("routed"):   # a model's layer, 3-D input: nn.Linear plain and patched
            x3 = x.view(1, M, K)
            plain, patched = (torch.nn.Linear(K, N, bias=False, device="cuda", dtype=torch.float16) for _ in "ab")
            for m in (plain, patched):
                m.weight.requires_grad_(False)   # as under inference: the patched forward's condition
            cudal2.patch(patched)
            paths |= {"F_linear_3d": lambda: F.linear(x3, w), "cpp_front_3d": lambda: ext.front(x3, w, None),
                      "cudal2_linear_3d": lambda: cudal2.linear(x3, w),
                      "module_plain": lambda: plain(x3), "module_patched": lambda: patched(x3)}
        n = 300 if "GPU-bound" in label else 20000
        # a model's layers run under inference_mode, which takes the patched layer's short path
        with torch.inference_mode() if label.startswith("routed") else contextlib.nullcontext():
            for f in paths.values():
                per_call_us(f, min(n, 2000))
            runs = {k: [] for k in paths}
            for _ in range(7 if n > 1000 else 21):   # interleaved rounds: drifts in the host's speed hit every path alike
                for k, f in paths.items():
                    runs[k].append(per_call_us(f, n))
        med = {k: statistics.median(v) for k, v in runs.items()}
        rows[label] = {"us_per_call": med, "extra_us_vs_F_linear": {k: v - med["F_linear"] for k, v in med.items()},
                       "stats": lib.stats()}
    print(json.dumps(rows, indent=1))
    out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    main(ap.parse_args().out)
