"""The product bench's noise floor: F.linear against itself (an A/A pair), beside cudal2.linear
and torch.mm(A, W.t()) (the dispatcher's vendor call) against F.linear, timed exactly as
`cudal2 library bench` times a shape (cudal2.library.product_bench.modes: eager, graph, flushed
paired rounds), a few times over in one process, with the kernels each caller launches.

Guarantees: both A/A callers are the same call on the same tensors, so any ratio away from 1.0 is
what the method itself reads where nothing differs; the library's ratio at a vendor-served shape
is then read against that spread, not against 1.0. Does not: explain a spread (clocks, memory
placement, the order of graph replays), or say anything about a served shape's kernel.

With `--feed`, every pair is timed as the product bench times it now (`feed.Feed`: fresh A for every
timed call, every output kept, the `checked` side's drawn and compared after each round): the A/A
pair once with its first side checked (`aa_checked`, the bench's asymmetry) and once with neither
(`aa`), and `cudal2.linear` (checked) against F.linear.

    python eval/aa_probe.py --shape 512x1024x8192 --shape 2048x3584x18944 --repeats 3 --out F
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def launched(torch, f) -> list[str]:
    """The GPU kernels one call of f launches, by name (the profiler's CUDA activity)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        f()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type.name == "CUDA"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", action="append", required=True, help="MxNxK (repeat the flag)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--feed", action="store_true", help="time as the product bench does (feed.Feed)")
    a = ap.parse_args()

    import torch
    import cudal2
    from cudal2.library.product_bench import TorchClock, _torch_inputs, flush_buffer, modes, pace, ran, torch_feed
    from cudal2.problem import parse_mnk

    F = torch.nn.functional
    lib = cudal2.library.default()   # the shipped library, as `cudal2.linear` uses it
    flush = flush_buffer(torch)
    clock = TorchClock(torch, flush)
    rows = []
    for text in a.shape:
        p = parse_mnk(text)
        M, N, K = p.M, p.N, p.K
        A, W = _torch_inputs(torch, M, N, K)
        same1 = lambda: F.linear(A, W)   # noqa: E731  two closures of one call: the A/A pair
        same2 = lambda: F.linear(A, W)   # noqa: E731
        ours = lambda: cudal2.linear(A, W)  # noqa: E731
        mm = lambda: torch.mm(A, W.t())     # noqa: E731  the call the dispatcher's vendor path makes
        before = dict(lib.stats()["hits"])
        for _ in range(3):
            same1(), same2(), ours()
        torch.cuda.synchronize()
        served = ran(before, lib.stats()["hits"], None)["kernel_ran"]
        paced = pace(clock, same1, a.rounds, a.calls)
        kernels = {name: launched(torch, f) for name, f in (("F.linear", same1), ("cudal2.linear", ours), ("mm", mm))}
        print(json.dumps({"M": M, "N": N, "K": K, "kernels": kernels}), flush=True)
        for rep in range(a.repeats):
            if a.feed:
                pairs = {}
                for name, checked, first in (("aa_checked", True, F.linear), ("aa", False, F.linear),
                                             ("library", True, cudal2.linear)):
                    feed = torch_feed(torch, A, W, a.calls)
                    one = feed.caller(lambda x, f=first: f(x, W), checked=checked)
                    two = feed.caller(lambda x: F.linear(x, W))
                    fed = pace(clock, two, a.rounds, a.calls, feed.round_cap)
                    pairs[name] = modes(clock, one, two, feed=feed, **fed)
                    pairs[name]["timed_checks"] = {"rounds": feed.checks, "failed": feed.failures}
                row = {"M": M, "N": N, "K": K, "repeat": rep, "served": served, "feed": fed, "kernels": kernels,
                       **{k: {m: v[m] for m in ("eager", "graph", "flushed", "graph_us", "timed_checks")}
                          for k, v in pairs.items()}}
            else:
                aa = modes(clock, same1, same2, **paced)
                lv = modes(clock, ours, same1, **paced)
                mv = modes(clock, mm, same1, **paced)
                row = {"M": M, "N": N, "K": K, "repeat": rep, "served": served, **paced, "kernels": kernels,
                       "aa": {m: aa[m] for m in ("eager", "graph", "flushed")},
                       "library": {m: lv[m] for m in ("eager", "graph", "flushed")},
                       "mm": {m: mv[m] for m in ("eager", "graph", "flushed")}}
            rows.append(row)
            print(json.dumps(row), flush=True)
    spread = {m: [r["aa"][m] for r in rows] for m in ("eager", "graph", "flushed")}
    summary = {m: {"min": min(v), "max": max(v), "median": statistics.median(v)} for m, v in spread.items()}
    a.out.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows, "aa_spread": summary}, indent=1))
    print(json.dumps({"aa_spread": summary}))


if __name__ == "__main__":
    main()
