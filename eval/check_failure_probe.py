"""Which of the product bench's checks fail, and on which side, at given shapes: `measure_shape`
(cudal2.linear against F.linear, the bench's own call) a few times over, printing each row's
`timed_checks` (failed rounds by kind: agree, precise, snapshot, intact). For a rare failure seen
in a bench run (2026-12-07: one round each at 16x152064x5120 and 16x128256x8192, vendor-served).

    python eval/check_failure_probe.py --shape 16x152064x5120 --repeats 3
"""
from __future__ import annotations

import argparse
import json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", action="append", required=True, help="MxNxK (repeat the flag)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=50)
    a = ap.parse_args()

    import torch

    import cudal2
    from cudal2.library import product_bench as pb
    from cudal2.problem import parse_mnk
    lib = cudal2.library.default()
    flush = pb.flush_buffer(torch)
    for text in a.shape:
        p = parse_mnk(text)
        for _ in range(a.repeats):
            row = pb.measure_shape(torch, lib, p.M, p.N, p.K, rounds=a.rounds, calls=a.calls, flush=flush)
            print(json.dumps({"shape": text, "kernel_ran": row["kernel_ran"], "timed_checks": row["timed_checks"],
                              "graph": row["graph"], "calls": row["calls"]}), flush=True)


if __name__ == "__main__":
    main()
