"""Harness figures for the closing note (run on the GPU machine):

  python eval/harness_bench.py noise       the same kernels evaluated twice: spread between runs
  python eval/harness_bench.py throughput  64 distinct raw-CUDA kernels: verified candidates per minute

Writes JSON next to --out and prints a table. Figures are ratios and spreads from one run on
one device; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import tempfile
import time
from pathlib import Path

from cudal2.config import Config
from cudal2.harness.evaluate import Candidate, Evaluator
from cudal2.problem import Problem

ROOT = Path(__file__).resolve().parent.parent
WMMA = (ROOT / "tests/kernels/good/wmma_tiled.cu").read_text()


def variant(bm: int, bn: int, bk: int, wm: int, wn: int, pad: int) -> str:
    s = re.sub(r"constexpr int BM = \d+, BN = \d+, BK = \d+;", f"constexpr int BM = {bm}, BN = {bn}, BK = {bk};", WMMA)
    s = re.sub(r"constexpr int PAD = \d+;", f"constexpr int PAD = {pad};", s)
    return re.sub(r"constexpr int WARPS_M = \d+, WARPS_N = \d+;", f"constexpr int WARPS_M = {wm}, WARPS_N = {wn};", s)


def variants() -> list[Candidate]:
    out = []
    # The seed kernel needs BM == BN; padding varies in 16-byte steps.
    for bm, bk, (wm, wn), pad in itertools.product((64, 128), (32, 64), ((2, 4), (2, 2), (1, 4), (4, 2)), (8, 16, 24, 32)):
        bn = bm
        out.append(Candidate(f"wmma_{bm}x{bn}x{bk}_w{wm}x{wn}_p{pad}", variant(bm, bn, bk, wm, wn, pad)))
    return out


def noise(cfg: Config, out: Path) -> None:
    shapes = [Problem(4096, 4096, 4096), Problem(128, 4096, 4096), Problem(1024, 1024, 1024)]
    rows = []
    for p in shapes:
        runs = []
        for rep in range(2):  # a fresh worker each time: the second run shares nothing but the GPU
            ev = Evaluator(cfg)
            (r,) = ev.evaluate([Candidate("wmma_tiled", WMMA)], p, reuse=False)
            ev.close()
            assert r.ok, r.reason
            runs.append(r)
        for mode in cfg.timing.modes:
            for runner in runs[0].times[mode]:
                a, b = (x.times[mode][runner].median_us for x in runs)
                rows.append({"shape": str(p), "mode": mode, "runner": runner, "run1_us": a, "run2_us": b,
                             "spread_pct": 100 * abs(a - b) / min(a, b)})
            sa, sb = (x.speedup[mode]["vendor_best"] for x in runs)
            rows.append({"shape": str(p), "mode": mode, "runner": "speedup_vs_vendor_best", "run1_us": sa, "run2_us": sb,
                         "spread_pct": 100 * abs(sa - sb) / min(sa, sb)})
    out.write_text(json.dumps(rows, indent=1))
    for r in rows:
        print(f"{r['shape']:>16} {r['mode']:>8} {r['runner']:>24}  {r['run1_us']:10.3f} {r['run2_us']:10.3f}  spread {r['spread_pct']:5.2f}%")


def throughput(cfg: Config, out: Path) -> None:
    cands = variants()
    p = Problem(1024, 1024, 1024)
    ev = Evaluator(cfg)
    t0 = time.monotonic()
    results = ev.evaluate(cands, p, reuse=False)
    wall = time.monotonic() - t0
    ev.close()
    ok = sum(r.ok for r in results)
    stages = {}
    for r in results:
        stages[r.stage.value] = stages.get(r.stage.value, 0) + 1
    best = max((r for r in results if r.ok), key=lambda r: r.speedup["offline"]["vendor_best"], default=None)
    summary = {"candidates": len(cands), "verified": ok, "wall_s": wall, "verified_per_min": 60 * ok / wall,
               "candidates_per_min": 60 * len(cands) / wall, "stages": stages, "shape": str(p),
               "best": best and {"name": best.name, "offline_speedup_vs_vendor_best": best.speedup["offline"]["vendor_best"]}}
    out.write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["noise", "throughput"])
    ap.add_argument("--out", type=Path, default=Path("harness_bench.json"))
    a = ap.parse_args()
    cfg = Config.load(build={"cache_dir": tempfile.mkdtemp()})
    {"noise": noise, "throughput": throughput}[a.what](cfg, a.out)
