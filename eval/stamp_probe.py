"""What the bench's stamp (library/stamp.py: each eager or graph call writes its own A right before
it) changes: the rows of kernels from tests/kernels (cheats and honest controls), each the one
entry of its own library, measured by the product bench with the stamp and without it; and what
the stamp costs both sides where nothing differs (F.linear against itself, its per-call time with
and without the stamp). With `--host`, only where the eager path's host time goes, per call:
F.linear alone, a stamp's write alone, its launch alone (no capture query), the capture query
alone, and a stamped feed caller around F.linear (the sixth session read +41 µs a call in eager
mode with the stamp, and ~3 µs of it in Python).

Does not: decide anything (the bench and the GPU tests do); the rows are for reading side by side.

    PYTHONPATH=. python eval/stamp_probe.py --case bad/zz58_pool_read_ahead.cu@16x4096x4096 \
        --case good/tiled_v2.cu@16x4096x4096 --out F
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

KEEP = ("eager", "graph", "flushed", "eager_us", "graph_us", "agree", "kernel_ran", "timed_checks", "stamped",
        "stamp_us", "graph_error")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", required=True,
                    help="KERNEL@MxNxK: a file under tests/kernels at a shape (repeat the flag)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--host", action="store_true", help="only the host time of each part of a stamped call")
    a = ap.parse_args()
    if a.host:
        rows = [host_costs(text.split("@")[-1]) for text in a.case]
        a.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return

    import torch

    import cudal2
    from cudal2.library import Library
    from cudal2.library import product_bench as pb
    from cudal2.problem import parse_mnk
    from tests.test_gpu_library import add

    flush = pb.flush_buffer(torch)
    stamp = pb._stamp
    rows = []
    cases = [c.split("@") for c in a.case]
    for on in (True, False):
        pb._stamp = stamp if on else (lambda *args: None)
        for path, text in cases:
            p = parse_mnk(text)
            name = Path(path).stem
            folder = Path(tempfile.mkdtemp()) / name
            add(folder, name, path, p.M, p.N, p.K)
            cudal2.library._default = Library(folder)
            row = pb.measure_shape(torch, cudal2.library._default, p.M, p.N, p.K, rounds=a.rounds,
                                   calls=a.calls, flush=flush, eid=name)
            rows.append({"shape": text, "kernel": path, "stamp": on, **{k: row.get(k) for k in KEEP}})
            print(json.dumps(rows[-1]), flush=True)
        for text in sorted({t for _, t in cases}):   # the A/A pair: what the stamp costs where nothing differs
            p = parse_mnk(text)
            A, W = pb._torch_inputs(torch, p.M, p.N, p.K)
            feed = pb.torch_feed(torch, A, W, a.calls)
            F = torch.nn.functional
            row = pb.paced_modes(pb.TorchClock(torch, flush), feed.caller(lambda x: F.linear(x, W), checked=True),
                                 feed.caller(lambda x: F.linear(x, W)), a.rounds, a.calls, feed=feed)
            rows.append({"shape": text, "kernel": "F.linear (A/A)", "stamp": on, **{k: row.get(k) for k in KEEP}})
            print(json.dumps(rows[-1]), flush=True)
    pb._stamp = stamp
    a.out.write_text("".join(json.dumps(r) + "\n" for r in rows))


def host_costs(text: str, calls: int = 400, repeats: int = 5) -> dict:
    """µs of host time a call (median of `repeats` loops of `calls`, the GPU drained between loops,
    so no loop waits on a full launch queue) of each part of a stamped eager call at one shape."""
    import ctypes
    import statistics
    import time

    import torch

    from cudal2.library import product_bench as pb
    from cudal2.problem import parse_mnk
    p = parse_mnk(text)
    A, W = pb._torch_inputs(torch, p.M, p.N, p.K)
    feed = pb.torch_feed(torch, A, W, calls=min(calls, 50))
    stamp, F = feed.stamp, torch.nn.functional
    s = torch.cuda.current_stream().cuda_stream
    status = ctypes.c_int()
    caller = feed.caller(lambda x: F.linear(x, W))

    def turn():   # a stamped turn as many eager rounds make it, of the pool's size
        feed.begin(len(feed.pool), stamp=True)
        for _ in range(len(feed.pool)):
            caller()
    parts = {
        "F.linear": lambda: F.linear(A, W),
        "stamp.write": lambda: stamp.write(0),
        "cuLaunchKernel(stamp)": lambda: stamp._launch(stamp.writes[0], 1, (), s),
        "cuStreamIsCapturing": lambda: stamp.cu.cuStreamIsCapturing(s, ctypes.byref(status)),
        "torch current stream": lambda: torch.cuda.current_stream().cuda_stream,
    }
    row: dict = {"shape": text, "host_us": {}}
    for name, op in parts.items():
        times = []
        for _ in range(repeats):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                op()
            times.append((time.perf_counter() - t0) / calls * 1e6)
        row["host_us"][name] = statistics.median(times)
    times = []
    for _ in range(repeats):   # whole stamped turns through the feed's caller
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        turn()
        times.append((time.perf_counter() - t0) / len(feed.pool) * 1e6)
        feed.check()
    row["host_us"]["stamped feed call of F.linear"] = statistics.median(times)
    print(json.dumps(row), flush=True)
    return row


if __name__ == "__main__":
    main()
