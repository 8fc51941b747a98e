"""Nsight Compute, side by side: the library's kernel and cuBLAS at the same shapes, on the GPU.

  python eval/profile_pairs.py --root kernels_out --arch sm90 --shapes 12288,8192,2048 1024,1024,12288 [-c cfg.toml]
  ... --out pairs.json     also write every profile as JSON
  python eval/profile_pairs.py --shapes 4096,4096,4096 --family sm90raw --params '{"EPI": "tma", "STAGES": 3, ...}'
                           a family's point rendered at each shape instead of the library entry

For each shape: build the library entry's source (build cache), profile one call of it and one
cublasGemmEx TN call on the same kind of inputs (`cudal2.harness.profile_target`, clocks left
alone), and print one row each: kernels launched, summed duration, SM / memory / DRAM throughput
(% of peak), tensor-pipe activity, achieved occupancy, grid, and the three largest warp stalls.
Durations are ncu's (caches flushed between replay passes), for the limiter, not for speedups:
speedups come from `cudal2 library bench`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudal2.config import Config  # noqa: E402
from cudal2.harness.build import build  # noqa: E402
from cudal2.harness.profile import CUBLAS, ProfileError, profile  # noqa: E402
from cudal2.library import load  # noqa: E402
from cudal2.problem import parse_mnk  # noqa: E402


def row(label: str, prof: dict) -> str:
    s = prof["summary"]
    stalls = ", ".join(f"{k} {v:.1f}" for k, v in list(s.get("stalls", {}).items())[:3])
    return (f"  {label:8} {s['n_kernels']} kernel(s) {s.get('duration_ns', 0) / 1e3:8.1f} us  "
            f"sm {s.get('sm_pct', 0):5.1f}%  mem {s.get('memory_pct', 0):5.1f}%  dram {s.get('dram_pct', 0):5.1f}%  "
            f"tensor {s.get('tensor_pipe_pct', 0):5.1f}%  occ {s.get('achieved_occupancy_pct', 0):5.1f}%  "
            f"grid {s.get('grid_size', 0):.0f}  stalls: {stalls}\n"
            f"           {s['dominant_kernel'][:150]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="kernels_out")
    ap.add_argument("--arch", default="sm90")
    ap.add_argument("--shapes", nargs="+", required=True, help="M,N,K ...")
    ap.add_argument("--metrics", default="default")
    ap.add_argument("--out")
    ap.add_argument("-c", "--config", help="cudal2 TOML config (its [build] section: cache, flags)")
    ap.add_argument("--family", help="profile this family's point (--params, complete) instead of the library entry")
    ap.add_argument("--params", default="{}", help="the point's parameters, JSON")
    a = ap.parse_args()
    cfg = Config.load(a.config) if a.config else Config()
    lib = None if a.family else load(a.root, a.arch)
    out = []
    for text in a.shapes:
        p = parse_mnk(text)
        if a.family:
            from cudal2.kernels.family import Limits, get_family
            fam, params = get_family(a.family), json.loads(a.params)
            why = fam.invalid(params, p, Limits())
            if why:
                print(f"{p}: {a.family} {params} is not valid here: {why}")
                continue
            eid, family, source = f"{a.family} point", a.family, fam.render(params, p)
        else:
            e = lib.lookup(p.M, p.N, p.K)
            if e is None:
                print(f"{p}: no library entry; skipped")
                continue
            eid, family, params, source = e.id, e.family, e.params, (lib.folder / e.source).read_text()
        b = build(source, cfg.build)
        if not b.ok:
            print(f"{p}: {eid} does not build: {b.reason}")
            continue
        rec = {"shape": [p.M, p.N, p.K], "entry": eid, "family": family, "params": params}
        print(f"{p}  {eid}  {json.dumps(params, sort_keys=True)}")
        for label, target in (("library", b.lib_path), ("cublas", CUBLAS)):
            try:
                rec[label] = profile(target, p.M, p.N, p.K, a.metrics)
                print(row(label, rec[label]))
            except ProfileError as err:
                rec[label] = {"error": str(err)}
                print(f"  {label}: {str(err).splitlines()[0]}")
        out.append(rec)
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
