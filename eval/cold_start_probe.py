"""Where does the vendor's first call after an idle GPU lose time? Written when
eval/sustained_clock.py (2026-11-24) found F.linear's lone call after an idle GPU ~0.2 ms (13-17%)
slower than its calls back to back at 1.3-1.8 ms shapes, while cudal2.linear's was 1.5-3.6% slower,
with the SM clock the same for both sides: the harness's modes (a flush and a pause before every
replay) then credit our kernels with the vendor's cold start, which eager and graph never pay.

For each shape and side (cudal2.linear serving every entry, F.linear), after an L2 flush and an idle
GPU, `--calls` calls back to back with an event between each, so each call's time is its own, in two
variants:
- live: the host launches the calls as it goes (what the product bench's flushed mode times);
- queued: the calls are queued behind a 2 ms spin kernel of one thread, so the host's launch path is
  off the clock and the GPU has been busy (one SM) when the first call starts.
Reports per call index the median over `--rounds` rounds (sides alternate which goes first).
With `--inputs`, W is drawn another way (A stays Gaussian): the run that found the judge's timed
inputs flattering (2026-11-24: 'signed' W, ours 1.060 of F.linear at 8192^3, randn 1.016) used
`--variants queued --inputs X` for each X (results/cold_start_inputs_h100_2026-11-24.json).

    cudal2 library build && python eval/cold_start_probe.py --out results/cold_start_h100_DATE.json

Does not: assert anything, change clocks, or pair ratios (it reports times, side by side).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import cupy as cp
import numpy as np
import torch

import cudal2
from cudal2.library import folder, Library
from cudal2.library import product_bench as pb

_SPIN = r"""
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""
SHAPES = [(8192, 8192, 8192), (8192, 14336, 4096), (2048, 28672, 8192), (4096, 4096, 4096)]


def sequence(f, calls: int, spin=None) -> list[float]:
    """Per-call ms of `calls` calls of f after whatever ran before; behind `spin` when given."""
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(calls + 1)]
    if spin is not None:
        stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        with stream:
            spin((1,), (1,), (np.uint64(2_000_000),))
    ev[0].record()
    for i in range(calls):
        f()
        ev[i + 1].record()
    ev[-1].synchronize()
    return [ev[i].elapsed_time(ev[i + 1]) for i in range(calls)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--idle-s", type=float, default=0.05)
    ap.add_argument("--inputs", choices=("randn", "harness", "unit_signed", "half_signed", "uniform"), default="randn",
                    help="A is Gaussian; W: randn (torch), harness ('signed' from the judge's generator, "
                         "guards.fill: U(0.5, 1), the sign flipped every 128 columns, what its timing stage "
                         "drew until 2026-11-24), unit_signed (the same drawn by torch), half_signed (|N(0, 1)| "
                         "with those signs), uniform (U(0, 1))")
    ap.add_argument("--variants", default="live,queued")
    ap.add_argument("--shapes", default="")
    a = ap.parse_args()
    spin = cp.RawKernel(_SPIN, "spin")
    cudal2.library._default = Library(folder(), serve_margin=None)   # serve every entry
    flush = pb.flush_buffer(torch)
    rows = []
    shapes = [tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",")] if a.shapes else SHAPES
    variants = a.variants.split(",")
    for M, N, K in shapes:
        A, W = pb._torch_inputs(torch, M, N, K)
        if a.inputs == "harness":
            from cudal2.harness import guards
            guards.fill(cp.asarray(A), 1, "normal")
            guards.fill(cp.asarray(W), 2, "signed")
            torch.cuda.synchronize()
        elif a.inputs != "randn":
            signs = 1 - 2 * ((torch.arange(K, device="cuda") // 128) % 2).to(torch.float16)
            mag = {"unit_signed": 0.5 + 0.5 * torch.rand(N, K, device="cuda"),
                   "half_signed": torch.randn(N, K, device="cuda").abs(),
                   "uniform": torch.rand(N, K, device="cuda")}[a.inputs].half()
            W.copy_(mag * (signs if a.inputs != "uniform" else 1))
        sides = {"cudal2": lambda: cudal2.linear(A, W), "F.linear": lambda: torch.nn.functional.linear(A, W)}
        for f in sides.values():
            for _ in range(3):
                f()
        got = {(s, v): [] for s in sides for v in variants}
        for r in range(a.rounds):
            for name in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
                for variant in variants:
                    flush.zero_()
                    torch.cuda.synchronize()
                    time.sleep(a.idle_s)
                    got[name, variant].append(sequence(sides[name], a.calls, spin if variant == "queued" else None))
        for (name, variant), seqs in got.items():
            row = {"M": M, "N": N, "K": K, "side": name, "variant": variant, "inputs": a.inputs,
                   "per_call_ms": [statistics.median(s[i] for s in seqs) for i in range(a.calls)]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    a.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
