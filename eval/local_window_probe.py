"""Probe (GPU): which raw local addresses a kernel can write, and whether guards.scrub clears them.

A kernel may address local memory with any integer (`st.local [r]`), not only its own frame. This
reports, per address range, whether a full-grid write there faults, and how many marker words
written there survive `guards.scrub()` to be read by the next kernel. Each range runs in a fresh
process (a fault ends the context). Not a test: it prints one JSON line per range.
    python3 eval/local_window_probe.py [--out FILE]
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SRC = (Path(__file__).resolve().parents[1] / "tests/kernels/probe/local_window.cu").read_text()


def child(lo: int, hi: int) -> dict:
    import cupy as cp
    import numpy as np
    from cudal2.harness import guards
    m = cp.RawModule(code=SRC)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    out = cp.zeros(2, dtype=cp.uint64)
    m.get_function("frame_addr")((1,), (32,), (out,))
    cp.cuda.Device().synchronize()
    res = {"lo": lo, "hi": hi, "frame_local_addr_4096B": int(out[0].get()),
           "stack_limit": cp.cuda.runtime.deviceGetLimit(0)}
    key, grid = 0x5EED1234, (2 * sms,)
    found = cp.zeros(1, dtype=cp.uint64)
    try:
        m.get_function("write_raw")(grid, (1024,), (np.uint32(lo), np.uint32(hi), np.uint32(key)))
        cp.cuda.Device().synchronize()
        m.get_function("read_raw")(grid, (1024,), (np.uint32(lo), np.uint32(hi), np.uint32(key), found))
        cp.cuda.Device().synchronize()
        res["survive_no_scrub"] = int(found.get()[0])
        found[:] = 0
        m.get_function("write_raw")(grid, (1024,), (np.uint32(lo), np.uint32(hi), np.uint32(key)))
        guards.scrub()
        m.get_function("read_raw")(grid, (1024,), (np.uint32(lo), np.uint32(hi), np.uint32(key), found))
        cp.cuda.Device().synchronize()
        res["survive_scrub"] = int(found.get()[0])
    except Exception as e:  # a fault: this range is outside the window
        res["fault"] = str(e).splitlines()[0][:120]
    return res


def main() -> None:
    if len(sys.argv) >= 4 and sys.argv[1] == "--child":
        print(json.dumps(child(int(sys.argv[2]), int(sys.argv[3]))))
        return
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    # The window ends at 16 MiB on the H100 (frames sit just below it; addresses 0..1 MiB fault).
    top = 1 << 24
    edges = [top - b for b in (65536, 32768, 16384, 12288, 8192, 6144, 5120, 4672, 4096, 2048, 576, 0)]
    rows = []
    for lo, hi in zip(edges, edges[1:]):
        p = subprocess.run([sys.executable, __file__, "--child", str(lo), str(hi)], capture_output=True, text=True,
                           timeout=120)
        line = (p.stdout.strip().splitlines() or [json.dumps({"lo": lo, "hi": hi, "error": p.stderr[-300:]})])[-1]
        print(line, flush=True)
        rows.append(json.loads(line))
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
