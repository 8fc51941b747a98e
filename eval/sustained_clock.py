"""Do our kernels lose more SM clock than the vendor's under sustained load? Written when the
sm90raw winners measured 4-6% ahead of nvjet in the harness (short replays with pauses) and in the
product bench's flushed mode (one call after an idle GPU), but even in eager and graph (50 calls
back to back) at shapes whose operands exceed the L2 in every mode (2026-11-24).

For each shape and side (cudal2.linear serving every entry, F.linear): a burst (one call after an
idle GPU) and a sustained run (`--calls` calls back to back), each timed by events and followed at
once by a probe kernel that reads %clock64 against %globaltimer on every SM for ~20 us: the SM clock
the work left behind (median over SMs, MHz).

    cudal2 library build && python eval/sustained_clock.py --out results/sustained_clock_h100_DATE.json

Does not: change clocks, assert anything, or pair rounds (it reports medians of `--rounds`).
First run (H100, 2026-11-24, results/sustained_clock_h100_2026-11-24.json): both sides fall from
1.69-1.88 GHz to 1.40-1.52 under sustained load, ours no more than nvjet's; the harness's lead came
from its inputs instead (eval/cold_start_probe.py --inputs).
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

_PROBE = r"""
extern "C" __global__ void clock_probe(unsigned long long spin_ns, float* mhz) {
    unsigned long long c0 = clock64(), t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < spin_ns);
    const unsigned long long c1 = clock64();
    if (threadIdx.x == 0) mhz[blockIdx.x] = (float)(c1 - c0) * 1e3f / (float)(t - t0);
}
"""
SHAPES = [(8192, 8192, 8192), (8192, 8192, 28672), (8192, 14336, 4096), (2048, 28672, 8192)]


def clock_mhz(probe, sms: int) -> float:
    out = cp.zeros(sms, dtype=cp.float32)
    stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    with stream:
        probe((sms,), (32,), (np.uint64(20_000), out))
    stream.synchronize()
    return float(np.median(cp.asnumpy(out)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    probe = cp.RawKernel(_PROBE, "clock_probe")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    cudal2.library._default = Library(folder(), serve_margin=None)   # serve every entry
    flush = pb.flush_buffer(torch)
    clock = pb.TorchClock(torch, flush)
    rows = []
    for M, N, K in SHAPES:
        A, W = pb._torch_inputs(torch, M, N, K)
        sides = {"cudal2": lambda: cudal2.linear(A, W), "F.linear": lambda: torch.nn.functional.linear(A, W)}
        for name, f in sides.items():
            for _ in range(3):
                f()
            got = {"burst_ms": [], "burst_mhz": [], "sustained_ms": [], "sustained_mhz": []}
            for _ in range(a.rounds):
                clock.idle_cold()
                time.sleep(0.05)                      # an idle GPU, as between requests
                got["burst_ms"].append(clock.time(f))
                got["burst_mhz"].append(clock_mhz(probe, sms))
                ms = clock.time(lambda: pb.many(f, a.calls)) / a.calls
                got["sustained_ms"].append(ms)
                got["sustained_mhz"].append(clock_mhz(probe, sms))
            row = {"M": M, "N": N, "K": K, "side": name, **{k: statistics.median(v) for k, v in got.items()}}
            rows.append(row)
            print(json.dumps(row), flush=True)
    a.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
