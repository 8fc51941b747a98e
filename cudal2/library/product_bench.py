"""`cudal2 library bench`: the library measured where users call it, `cudal2.linear` against
`torch.nn.functional.linear`, in a fresh process.

Guarantees:
- every entry's shape is measured, and each extra shape given (`shapes`: e.g. the dev set, whose
  shapes without an entry measure what a user pays there, the vendor through the library), on
  Gaussian inputs (never zeros), after checking that the two
  agree. With `serve_all` this process serves every entry, whatever the manifest says, so the
  bench can decide what is served; without it, what the manifest serves, as a user gets it (the
  vendor's shapes then measure the fallback's cost). Whether the library call ran the entry's
  kernel (`lib.stats()`) is recorded beside each ratio;
- three modes, each as paired rounds (the two callers alternate, each round gives one ratio
  t_vendor / t_library, the median of the ratios is reported): eager (back-to-back calls, host
  overhead included), graph (the same calls captured in one CUDA graph and replayed), flushed
  (one call after an L2 flush and an idle GPU: the latency of a lone request);
- all timing is by CUDA events on torch's current stream; the first library call of the process
  is timed too (`first_call_ms`: loading every served binary and registering it);
- `run` writes one JSON line per shape as it is measured, so a stopped run keeps what it measured.

Does not: change the manifest (`record` does, for `--update`), or judge correctness beyond the
agreement check (that is the harness's job).
"""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

BANDS = ((0, 30, "below 2^30"), (30, 36, "2^30-2^35"), (36, 99, "2^36 and above"))


def band(M: int, N: int, K: int) -> str:
    f = math.log2(2 * M * N * K)
    return next(name for lo, hi, name in BANDS if lo <= f < hi)


def _paired(ours, theirs, rounds: int, run_one) -> float:
    ratios = []
    for r in range(rounds):
        order = (ours, theirs) if r % 2 == 0 else (theirs, ours)   # no caller always goes first
        t = {id(f): run_one(f) for f in order}
        ratios.append(t[id(theirs)] / t[id(ours)])
    return statistics.median(ratios)


def _events_ms(torch, work) -> float:
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    work()
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1)


def measure_shape(torch, lib, M: int, N: int, K: int, rounds: int, calls: int, flush) -> dict:
    import cudal2
    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(M * 1_000_003 + N * 1009 + K)
    A = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=gen)
    W = torch.randn(N, K, device="cuda", dtype=torch.float16, generator=gen)
    ours = lambda: cudal2.linear(A, W)  # noqa: E731  the public API
    theirs = lambda: F.linear(A, W)     # noqa: E731
    before = lib.stats()["hits"]
    got, want = ours(), theirs()
    torch.cuda.synchronize()
    hit = sum(lib.stats()["hits"].values()) > sum(before.values())
    err = float((got.float() - want.float()).abs().max())
    scale = float(want.float().abs().max()) or 1.0
    row = {"M": M, "N": N, "K": K, "band": band(M, N, K), "kernel_ran": hit, "max_abs_diff": err,
           "agree": err <= 2e-2 * scale + 1e-2}
    for _ in range(3):   # warm-up, both
        ours(), theirs()

    def eager(f):
        return _events_ms(torch, lambda: [f() for _ in range(calls)])

    row["eager"] = _paired(ours, theirs, rounds, eager)
    graphs = {}
    for f in (ours, theirs):
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            f()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            for _ in range(calls):
                f()
        graphs[id(f)] = g
    row["graph"] = _paired(ours, theirs, rounds, lambda f: _events_ms(torch, graphs[id(f)].replay))

    def flushed(f):
        flush.zero_()               # the L2 holds none of this call's data
        torch.cuda.synchronize()    # the GPU goes idle...
        time.sleep(1e-5)            # ...for a while, as between requests
        return _events_ms(torch, f)

    row["flushed"] = _paired(ours, theirs, 3 * rounds, flushed)
    return row


def run(folder: Path, out: Path, rounds: int = 15, calls: int = 50, limit: int = 0,
        serve_all: bool = True, shapes: list[tuple[int, int, int]] = ()) -> list[dict]:
    """Measure every entry's shape of `folder` (the first `limit`, if given), then each of `shapes`
    no entry has; JSON lines to `out` (an entry's row carries its `id`)."""
    t_start = time.perf_counter()
    import torch

    import cudal2
    from cudal2.library import Library, LibraryError
    torch.cuda.init()
    torch.empty(1, device="cuda")   # the context exists before the first library call is timed
    e0 = Library(Path(folder)).entries[0]
    x = torch.randn(e0.M or e0.m_range[1], e0.K, device="cuda", dtype=torch.float16)
    w = torch.randn(e0.N, e0.K, device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    # The first call, as a new process makes it: the library read, the dispatcher loaded, then the
    # call itself (which loads and registers the one binary it needs), each part timed.
    t0 = time.perf_counter()
    lib = Library(Path(folder), serve_margin=None) if serve_all else Library(Path(folder))
    cudal2.library._default = lib
    t1 = time.perf_counter()
    lib.compiled()
    t2 = time.perf_counter()
    cudal2.linear(x, w)
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    first = {"total": (t3 - t0) * 1e3, "read_library": (t1 - t0) * 1e3, "load_dispatcher": (t2 - t1) * 1e3,
             "call_with_its_binary": (t3 - t2) * 1e3}
    first_ms = first["total"]
    entries = lib.entries[:limit] if limit else lib.entries
    have = {(e.M, e.N, e.K) for e in lib.entries}
    todo = [(e.id, e.M or e.m_range[1], e.N, e.K) for e in entries]
    todo += [(None, *s) for s in dict.fromkeys(tuple(s) for s in shapes) if s not in have]
    if lib.compiled() is None:
        raise LibraryError("cudal2: the compiled dispatcher is not built; run `cudal2 library build` first")
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    rows = []
    out.write_text("")
    from rich.progress import track
    for eid, M, N, K in track(todo, description="product bench"):
        row = {**({"id": eid} if eid else {}), **measure_shape(torch, lib, M, N, K, rounds, calls, flush)}
        rows.append(row)
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")
    summary = {"summary": True, "serve_all": serve_all, "served": len(lib.served), "first_call_ms": first_ms,
               "first_call_parts_ms": first, "process_s": time.perf_counter() - t_start,
               "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "stats": lib.stats(),
               "disabled": lib.disabled()}
    with out.open("a") as f:
        f.write(json.dumps(summary) + "\n")
    return rows


def geomeans(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Geomean of the ratios per band and overall, per mode, with the number of shapes."""
    out: dict[str, dict[str, float]] = {}
    for name in [b[2] for b in BANDS] + ["all"]:
        sel = [r for r in rows if name == "all" or r["band"] == name]
        if sel:
            out[name] = {m: math.exp(sum(math.log(r[m]) for r in sel) / len(sel)) for m in ("eager", "graph", "flushed")}
            out[name]["shapes"] = len(sel)
    return out


def record(folder: Path, rows: list[dict]) -> int:
    """Record each measured entry's product-path speedups into the manifest (`manifest.record_bench`);
    an entry whose kernel did not run or disagreed gets none: not served."""
    from cudal2.library import manifest
    return manifest.record_bench(folder, {r["id"]: {"kind": "product", "speedup": (
        {m: r[m] for m in ("eager", "graph", "flushed")} if r["kernel_ran"] and r["agree"] else {})}
        for r in rows if "id" in r})


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="the product-path bench, in this (fresh) process")
    ap.add_argument("folder", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--served", action="store_true", help="serve what the manifest serves (default: every entry)")
    ap.add_argument("--shapes", type=Path, help="a shapes file (cudal2 generate --shapes): measure these too")
    a = ap.parse_args()
    from cudal2.problem import load_shapes
    extra = [(p.M, p.N, p.K) for p in load_shapes(a.shapes)] if a.shapes else []
    run(a.folder, a.out, a.rounds, a.calls, a.limit, serve_all=not a.served, shapes=extra)
