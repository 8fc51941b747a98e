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
from cudal2.library import Library
from cudal2.resources import resource


def per_call_us(f, n: int) -> float:
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        f()
    t = time.perf_counter() - t
    torch.cuda.synchronize()
    return t / n * 1e6


def main(out: Path) -> None:
    lib = Library(resource("kernels_out") / "sm90")
    cudal2.library._default = lib
    e = min((x for x in lib.served if x.binary), key=lambda x: x.M * x.N * x.K)
    rows = {}
    for label, (M, N, K) in (("served " + e.id, (e.M, e.N, e.K)), ("unserved 96x96x96", (96, 96, 96))):
        x = torch.randn(M, K, device="cuda", dtype=torch.float16)
        w = torch.randn(N, K, device="cuda", dtype=torch.float16)
        ours = lambda: cudal2.linear(x, w)               # noqa: E731
        theirs = lambda: torch.nn.functional.linear(x, w)  # noqa: E731
        for f in (ours, theirs):
            per_call_us(f, 2000)
        pairs = [(per_call_us(ours, 20000), per_call_us(theirs, 20000)) for _ in range(7)]
        rows[label] = {"cudal2_us": statistics.median(p[0] for p in pairs),
                       "F_linear_us": statistics.median(p[1] for p in pairs),
                       "extra_us": statistics.median(p[0] - p[1] for p in pairs), "stats": lib.stats()}
    print(json.dumps(rows, indent=1))
    out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    main(ap.parse_args().out)
