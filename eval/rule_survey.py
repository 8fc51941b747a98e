"""Do the build's rules refuse honest code? Every honest v2 source this project has, through the
real build (policy, PTX rules, cubin rules, the machine-code rules `constbank` and `paramflow`),
on the CPU: the shipped library's sources, the good controls, the general tasks' references, and
rendered points of every family (sm90raw, the TMA family whose machine code `paramflow` follows,
at several shapes).

  python eval/rule_survey.py --out FILE.json [--per-shape 4] [--seed 11]

Prints and records each refusal with its reason; nothing is asserted (a refusal of honest code is
a false positive to read, and to name in docs/kernel-contract.md if it stays).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudal2.config import BuildConfig  # noqa: E402
from cudal2.harness.build import build_all  # noqa: E402
from cudal2.kernels.family import Limits, get_family  # noqa: E402
from cudal2.problem import Problem  # noqa: E402

SHAPES = [Problem(4096, 4096, 4096), Problem(257, 136, 1032), Problem(128, 4096, 16384), Problem(12288, 12288, 512),
          Problem(2048, 8192, 8192), Problem(16, 4096, 4096)]


def sources(per_shape: int, seed: int) -> dict[str, str]:
    out = {}
    for pattern in ("kernels_out/sm90/*.cu", "tests/kernels/good/*_v2.cu", "cudal2/rl/references/*.cu"):
        for f in sorted(ROOT.glob(pattern)):
            out[str(f.relative_to(ROOT))] = f.read_text()
    rng = random.Random(seed)
    for fam_name, n in (("sm90raw", per_shape), ("sm80", 1), ("skinny", 1), ("tiled", 1)):
        fam = get_family(fam_name)
        for p in SHAPES:
            pts = fam.valid_points(p, Limits())
            for q in rng.sample(pts, min(n, len(pts))):
                out[f"{fam_name}@{p.M}x{p.N}x{p.K} {json.dumps(q, sort_keys=True)}"] = fam.render(q, p)
    return out


def main(out: Path, per_shape: int, seed: int) -> None:
    srcs = sources(per_shape, seed)
    t0 = time.monotonic()
    results = build_all(list(srcs.values()), BuildConfig(), None, label="rule survey")
    refused = {name: f"{r.stage}: {r.reason}" for name, r in zip(srcs, results) if not r.ok}
    kinds = {"library": "kernels_out/", "good controls": "tests/kernels/good/", "task references": "cudal2/rl/",
             "sm90raw (TMA)": "sm90raw@", "sm80": "sm80@", "skinny": "skinny@", "tiled": "tiled@"}
    doc = {"sources": len(srcs), "by_kind": {k: sum(n.startswith(v) for n in srcs) for k, v in kinds.items()},
           "refused": refused, "seconds": time.monotonic() - t0}
    out.write_text(json.dumps(doc, indent=1))
    print(json.dumps({k: v for k, v in doc.items() if k != "refused"}), f"{len(refused)} refused")
    for name, why in refused.items():
        print(f"  {name}: {why[:300]}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-shape", type=int, default=4, help="sm90raw points per shape")
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    main(a.out, a.per_shape, a.seed)
