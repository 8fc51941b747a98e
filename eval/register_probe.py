"""Can a kernel read what an earlier launch left in the register file, and does `guards.scrub`
stop it? (The register channel left open in guards.Scrubber's docstring.)

`leave` (tests/kernels/probe/register_peek.cu) fills every thread slot's registers with words whose
high half and low byte are a marker, in one full wave at 32 registers a thread (or another allotment with
--leave-bounds); `peek` then reads accumulators it never wrote through wgmma with scale-d on over
zero operands, in as many warpgroups as fit. Per trial and per case, the number of peeked words that
carry the marker (24 bits: a random word matches once in 2^24, `chance_per_trial`; a 16-bit marker
matched scrubbed words by chance ~40 times a trial): `none` (leave, then peek), `scrub` (leave,
guards.scrub, peek), and `control`
(peek with scale-d off: it must find none, since D = 0 then).

  python eval/register_probe.py --out FILE.json [--trials 10] [--leave-bounds "1024, 2"]

Nothing is asserted: a measurement for eval/README.md (a marker after a scrub is a hole).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

import cupy as cp
import numpy as np

from cudal2.harness import guards

MARK_MASK = 0xFFFF00FF   # the bits leave's words share (its middle byte varies by thread and word)
SRC = Path(__file__).resolve().parent.parent / "tests" / "kernels" / "probe" / "register_peek.cu"


def main(out: Path, trials: int, leave_bounds: str) -> None:
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    threads = int(leave_bounds.split(",")[0])
    blocks_per_sm = int(leave_bounds.split(",")[1]) if "," in leave_bounds else 1
    # nvcc, not cupy's NVRTC: wgmma needs the sm_90a target, which cupy's compile does not ask for.
    cubin = Path(tempfile.mkdtemp()) / "register_peek.cubin"
    subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-O3", "-std=c++17", f"-DLEAVE_THREADS={threads}", f"-DLEAVE_BLOCKS={blocks_per_sm}",
                    "-o", str(cubin), str(SRC)], check=True)
    mod = cp.RawModule(path=str(cubin))
    leave, peek = mod.get_function("leave"), mod.get_function("peek")
    peek_blocks = 16 * sms          # 128-thread warpgroups: as many as fit, over every SM
    buf = cp.empty(peek_blocks * 128 * 16, dtype=cp.uint32)
    rows = []
    for t in range(trials):
        marker = np.uint32(((0xA5C3 + 7 * t) & 0xFFFF) << 16 | 0x5A)
        row = {"trial": t, "marker": hex(int(marker))}
        for case in ("none", "scrub", "control"):
            buf.fill(0)
            leave((blocks_per_sm * sms,), (threads,), (marker, np.uint64(0)))
            if case == "scrub":
                guards.scrub()
            peek((peek_blocks,), (128,), (np.uint32(0 if case == "control" else 1), buf))
            cp.cuda.runtime.deviceSynchronize()
            row[case] = int(((buf & MARK_MASK) == int(marker)).sum())
        rows.append(row)
        print(row, flush=True)
    summary = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "leave_bounds": leave_bounds,
               "words_peeked": int(buf.size), "chance_per_trial": buf.size / 2**24, "rows": rows,
               "total": {c: sum(r[c] for r in rows) for c in ("none", "scrub", "control")}}
    out.write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary["total"]))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--leave-bounds", default="1024, 2", help='leave\'s __launch_bounds__ ("threads, blocks per SM")')
    a = ap.parse_args()
    main(a.out, a.trials, a.leave_bounds)
