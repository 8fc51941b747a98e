"""What the bench's stamp (library/stamp.py: each eager or graph call writes its own A right before
it) changes: the rows of kernels from tests/kernels (cheats and honest controls), each the one
entry of its own library, measured by the product bench with the stamp and without it; and what
the stamp costs both sides where nothing differs (F.linear against itself, its per-call time with
and without the stamp).

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
    a = ap.parse_args()

    import torch

    import cudal2
    from cudal2.library import Library
    from cudal2.library import product_bench as pb
    from cudal2.problem import parse_mnk
    from tests.test_gpu_library import add

    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
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


if __name__ == "__main__":
    main()
