"""Does a kernel find the places of W's cells in registers it never wrote, right after the bench's
stamp or its cells kernel ran? (The places travel only as launch parameters, review 62; but the
stamp's threads form the address W + place in registers to store to it, and no scrub runs between
the stamp and the call it precedes.)

Each trial: W's cells are set or read at drawn places (`Stamp.write(j, at)`, the cells kernel
alone, or `WeightCells.get`, which ends with the register scrub), optionally followed by
`guards.scrub_regs()` (the control), then the pointer probe of
`eval/register_pointer_probe.py` (wgmma with run-time scale-d over zero operands reads its
accumulators, as bad/zz26 does) collects every 64-bit value with this process's high address
word; a hit is one equal to the address of a drawn cell.

Guarantees: counts hits per step over `--trials`. Does not: run the bench or any candidate.

    python eval/cell_register_probe.py --out results/cell_register_probe_h100_DATE.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import cupy as cp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from register_pointer_probe import nvcc_probe  # noqa: E402

from cudal2.harness import guards  # noqa: E402
from cudal2.library import stamp  # noqa: E402


def trial(step: str, probe, A, W, out, cells, st) -> dict:
    at = random.sample(range(W.size), stamp.CELLS_MAX if step.startswith("cells") else stamp.WPOS)
    out.fill(0)
    cp.cuda.runtime.deviceSynchronize()
    if step.startswith("stamp"):
        st.write(0, at)
    elif step.startswith("cells-kernel"):   # the cells kernel alone, without the scrub `get` ends with
        cells._launch(at, None, cells.out.data.ptr, cells.stream())
    else:
        cells.get(at)
    if step.endswith("+scrub"):
        guards.scrub_regs()
    blocks = (out.size - 3) // 32 // 128
    probe((blocks,), (128,), (A, A, W, out, cp.int32(64)))   # (its third argument only gives the high word: W's)
    cp.cuda.runtime.deviceSynchronize()
    found = set(int(x) for x in cp.asnumpy(out[:-3]) if x)
    want = {W.data.ptr + 2 * c for c in at}
    return {"cells": len(at), "found": len(found & want), "pointer_like": len(found)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--trials", type=int, default=20)
    a = ap.parse_args()
    A = cp.ones(1 << 20, dtype=cp.float16)
    W = cp.random.standard_normal(4096 * 4096, dtype=cp.float32).astype(cp.float16)
    out = cp.zeros(325 * 128 * 32 + 3, dtype=cp.uint64)
    stream = lambda: cp.cuda.get_current_stream().ptr  # noqa: E731
    st = stamp.Stamp([A.data.ptr], A.size, stream, W.data.ptr)
    cells = stamp.WeightCells(W.data.ptr, 4096, 4096, stream)
    probe = nvcc_probe()
    rows = []
    for step in ("stamp", "stamp+scrub", "cells-kernel", "cells-kernel+scrub", "cells"):
        got = [trial(step, probe, A, W, out, cells, st) for _ in range(a.trials)]
        row = {"step": step, "trials": len(got), "cells_a_trial": got[0]["cells"],
               "trials_with_a_hit": sum(g["found"] > 0 for g in got), "hits": sum(g["found"] for g in got),
               "pointer_like": sum(g["pointer_like"] for g in got)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    a.out.write_text(json.dumps({"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
