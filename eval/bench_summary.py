"""The closing-note summary of `cudal2 library bench --json` results.

  python eval/bench_summary.py eval/results/library_bench_h100_run5.jsonl [...]

Per file: geomean speedups against vendor_default (the faster of cuBLAS TN/NN and the cuBLASLt
heuristic) and against cuBLASLt autotune, both modes, in bands of log2 FLOPs (2·M·N·K: < 30, 30–35,
>= 36, all), the geomean fraction of the physical floor reached offline, the lowest shapes of
2^36 FLOPs or more, and 4096^3 with its medians. Reads the results; measures nothing.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudal2.report import geomean  # noqa: E402

BANDS = {"<30": lambda b: b < 30, "30-35": lambda b: 30 <= b < 36, ">=36": lambda b: b >= 36, "all": lambda b: True}


def log_flops(r: dict) -> float:
    return math.log2(2 * r["M"] * r["N"] * r["K"])


def shape(r: dict) -> str:
    return f"{r['M']}x{r['N']}x{r['K']}"


def summarize(path: str) -> None:
    rs = [json.loads(line) for line in open(path)]
    ok = [r for r in rs if r["ok"]]
    print(f"{path}: {len(rs)} results, {len(ok)} verified")
    for name, pred in BANDS.items():
        sel = [r for r in ok if pred(log_flops(r))]
        sp = {(b, m): geomean([r["speedup"][m][b] for r in sel])
              for b in ("vendor_default", "cublaslt_autotune") for m in ("offline", "server")}
        floor = geomean([r["floor_fraction"]["offline"] for r in sel])
        print(f"  {name:6s} n={len(sel):2d}  vs vendor_default: offline {sp['vendor_default', 'offline']:.3f} "
              f"server {sp['vendor_default', 'server']:.3f} | vs autotune: offline "
              f"{sp['cublaslt_autotune', 'offline']:.3f} server {sp['cublaslt_autotune', 'server']:.3f} "
              f"| floor {floor * 100:.1f}%")
    big = [r for r in ok if log_flops(r) >= 36]
    for m in ("offline", "server"):
        low = sorted(big, key=lambda r: r["speedup"][m]["vendor_default"])[:3]
        print(f"  lowest >= 2^36 {m}: " + ", ".join(f"{shape(r)} {r['speedup'][m]['vendor_default']:.3f}" for r in low))
    for r in ok:
        if (r["M"], r["N"], r["K"]) == (4096, 4096, 4096):
            med = {m: ", ".join(f"{k} {v['median_us']:.1f}" for k, v in r["times"][m].items()) for m in r["times"]}
            print(f"  4096^3: offline {r['speedup']['offline']['vendor_default']:.3f} ({med['offline']} us), "
                  f"server {r['speedup']['server']['vendor_default']:.3f} ({med['server']} us); "
                  f"SM clock after {r['gpu'].get('sm_clock_mhz_after')} MHz")


if __name__ == "__main__":
    for f in sys.argv[1:]:
        summarize(f)
