"""Compare speedup estimators on long timing series (results of `cudal2 eval -c eval/noise.toml --json`).

  python eval/timing_noise.py r1.json r2.json ...   [--window 15] [--baseline cublas_nn]

For each result and mode, cut the per-round series into consecutive windows of the bench's round
count and print, per window, the ratio of medians (baseline median / candidate median) beside the
paired estimator (median of per-round ratios). The estimator whose windows agree more closely is the
steadier one; the spread between windows is what one bench run can swing by.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import numpy as np


def windows(series: list[float], w: int) -> list[np.ndarray]:
    a = np.asarray(series)
    return [a[i:i + w] for i in range(0, len(a) - w + 1, w)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--window", type=int, default=15)
    ap.add_argument("--baseline", default="cublas_nn")
    a = ap.parse_args()
    for f in a.files:
        r = json.load(open(f))
        if not r.get("ok"):
            print(f"{f}: failed at {r.get('stage')}: {r.get('reason')}")
            continue
        for mode, rs in r["times"].items():
            c, b = rs["candidate"]["series_us"], rs[a.baseline]["series_us"]
            rom = [np.median(bw) / np.median(cw) for bw, cw in zip(windows(b, a.window), windows(c, a.window))]
            par = [np.median(bw / cw) for bw, cw in zip(windows(b, a.window), windows(c, a.window))]
            print(f"{f} {mode:7s} cand med {np.median(c):7.1f} [{min(c):6.1f}..{max(c):6.1f}]  "
                  f"{a.baseline} med {np.median(b):7.1f} [{min(b):6.1f}..{max(b):6.1f}]")
            print(f"   all rounds: ratio of medians {np.median(b) / np.median(c):.3f}, paired {np.median(np.asarray(b) / np.asarray(c)):.3f}")
            print(f"   windows of {a.window}: ratio of medians {' '.join(f'{x:.3f}' for x in rom)} "
                  f"(sd {statistics.pstdev(rom):.3f});  paired {' '.join(f'{x:.3f}' for x in par)} "
                  f"(sd {statistics.pstdev(par):.3f})")


if __name__ == "__main__":
    sys.exit(main())
