"""Render a kernel family at a few diverse valid points per shape and judge them with the real
harness (run on the GPU machine):

  python eval/check_family.py sm80                      # ~12 points x 5 shapes, offline timing
  python eval/check_family.py sm80 --per-shape 4 --shapes 4096x4096x4096,257x136x1032:8
                                                        (SHAPE:N overrides --per-shape for one shape)

Points per shape: the best by the family's prior (one per distinct tile/warp/split structure),
then seeded random valid points that cover what the prior skips (other BK, STAGES, GROUP_M,
SPLIT_K). Prints one row per candidate as it finishes and writes all rows as JSON to
$OUT/check_<family>.json (or --out). Exits non-zero when any rendered point fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudal2.config import Config  # noqa: E402
from cudal2.harness.evaluate import Candidate, Evaluator  # noqa: E402
from cudal2.kernels.family import Family, Limits, Params, get_family  # noqa: E402
from cudal2.problem import Problem, parse_mnk  # noqa: E402

SHAPES = "4096x4096x4096,128x4096x4096,257x136x1032,64x64x8192,1024x1024x1024"


def pick(f: Family, p: Problem, lim: Limits, n: int, seed: int) -> list[Params]:
    valid = f.valid_points(p, lim)
    valid.sort(key=lambda x: -f.prior(x, p, lim))
    structure = lambda x: tuple(v for k, v in sorted(x.items()) if k not in ("GROUP_M", "STAGES"))
    chosen, seen = [], set()
    for x in valid:  # the prior's favourites, one per structure
        if len(chosen) >= (n + 1) // 2:
            break
        if structure(x) not in seen:
            seen.add(structure(x))
            chosen.append(x)
    rng = random.Random(seed)
    rest = [x for x in valid if structure(x) not in seen]
    rng.shuffle(rest)
    # Cover each value of each parameter at least once where possible, then fill at random.
    for key, values in f.space.items():
        for v in values:
            if len(chosen) >= n:
                break
            if any(x[key] == v for x in chosen):
                continue
            hit = next((x for x in rest if x[key] == v and structure(x) not in seen), None)
            if hit:
                seen.add(structure(hit))
                chosen.append(hit)
    for x in rest:
        if len(chosen) >= n:
            break
        if structure(x) not in seen:
            seen.add(structure(x))
            chosen.append(x)
    return chosen


def label(x: Params) -> str:
    return "_".join(f"{k}{v}" for k, v in x.items())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("family")
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--per-shape", type=int, default=12)
    ap.add_argument("--modes", default="offline", help="timing modes, comma separated (offline,server)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")) / "check.json")
    a = ap.parse_args()

    f = get_family(a.family)
    lim = Limits()
    cfg = Config.load(build={"cache_dir": tempfile.mkdtemp(prefix="cudal2-check-")},
                      timing={"modes": a.modes.split(",")})
    out = a.out if a.out.name != "check.json" else a.out.with_name(f"check_{a.family}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    t0 = time.monotonic()
    ev = Evaluator(cfg)
    mode = cfg.timing.modes[0]
    print(f"{'shape':>16} {'ok':>3} {'stage':>11} {'x vendor':>8} {'TFLOP/s':>8} {'prior':>7} {'regs':>4} {'spill':>5}  params / reason",
          flush=True)
    try:
        for text in a.shapes.split(","):
            text, _, count = text.partition(":")
            p = parse_mnk(text)
            pts = pick(f, p, lim, int(count) if count else a.per_shape, a.seed)
            cands = [Candidate(f"{a.family}_{label(x)}", f.render(x, p)) for x in pts]
            priors = {c.name: f.prior(x, p, lim) for c, x in zip(cands, pts)}
            params = {c.name: x for c, x in zip(cands, pts)}

            def show(r) -> None:
                res = next((v for k, v in (r.build.get("resources") or {}).items() if "gemm" in k), {})
                sp = r.speedup.get(mode, {}).get("vendor_best") if r.ok else None
                tf = r.tflops.get(mode) if r.ok else None
                row = {"shape": str(p), "name": r.name, "params": params[r.name], "ok": r.ok, "stage": r.stage.value,
                       "reason": r.reason, "speedup_vendor_best": sp, "tflops": tf, "prior": priors[r.name],
                       "registers": res.get("registers"), "spill_stores": res.get("spill_stores"),
                       "times_us": {k: v.median_us for k, v in r.times.get(mode, {}).items()} if r.ok else {}}
                rows.append(row)
                out.write_text(json.dumps(rows, indent=1))
                print(f"{str(p):>16} {'yes' if r.ok else 'NO':>3} {r.stage.value:>11} "
                      f"{(f'{sp:.3f}' if sp else '-'):>8} {(f'{tf:.1f}' if tf else '-'):>8} {priors[r.name]:7.1f} "
                      f"{str(res.get('registers', '-')):>4} {str(res.get('spill_stores', '-')):>5}  "
                      f"{json.dumps(params[r.name])}{'' if r.ok else '  ' + r.reason[:300]}", flush=True)

            ev.evaluate(cands, p, on_result=show, reuse=False)
    finally:
        ev.close()
    bad = [r for r in rows if not r["ok"]]
    print(f"\n{len(rows) - len(bad)}/{len(rows)} verified in {time.monotonic() - t0:.0f} s; results in {out}")
    for s in dict.fromkeys(r["shape"] for r in rows):
        good = [r for r in rows if r["shape"] == s and r["ok"]]
        if good:
            best = max(good, key=lambda r: r["speedup_vendor_best"])
            print(f"  {s:>16}: best {best['speedup_vendor_best']:.3f}x vendor_best ({best['tflops']:.1f} TFLOP/s) "
                  f"{json.dumps(best['params'])}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
