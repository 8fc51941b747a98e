"""Does the gaussian stage's bound (error <= k x cuBLAS's error) separate fp32 from fp16 accumulation?

For several K, evaluates the honest kernels and the fp16-accumulating one with verification only
(no timing), and prints each one's error ratio to cuBLAS (relative Frobenius, per gaussian trial)
next to the bound k. Run on the GPU machine: python eval/tolerance_separation.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from cudal2.config import Config
from cudal2.harness.evaluate import Candidate, Evaluator
from cudal2.problem import Problem

ROOT = Path(__file__).resolve().parent.parent
KERNELS = {"naive (fp32 acc)": "good/naive.cu", "wmma_tiled (fp32 acc)": "good/wmma_tiled.cu",
           "splitk (fp32 acc)": "good/splitk_workspace.cu", "fp16_accum": "bad/fp16_accum.cu"}


def main(out: Path) -> None:
    cfg = Config.load(build={"cache_dir": tempfile.mkdtemp()}, timing={"modes": ["offline"], "repeats": 3,
                      "baselines": ["cublas"], "max_sets": 2, "min_replay_ms": 0.1})
    ev = Evaluator(cfg)
    rows = []
    for K in (16, 64, 256, 1024, 4096, 16384):
        p = Problem(256, 256, K)
        for label, f in KERNELS.items():
            (r,) = ev.evaluate([Candidate(label, (ROOT / "tests/kernels" / f).read_text())], p, reuse=False)
            trials = r.checks.get(str(p), {}).get("gaussian", [])
            rows.append({"K": K, "kernel": label, "verdict": "pass" if r.ok else f"fail@{r.stage.value}",
                         "ratios": [round(t["rel_ratio"], 2) for t in trials if "rel_ratio" in t],
                         "dists": [t["dist"] for t in trials]})
            print(f"K={K:6d} {label:24s} {rows[-1]['verdict']:18s} ratio to cuBLAS {rows[-1]['ratios']} {rows[-1]['dists']}")
    ev.close()
    print(f"bound k = {cfg.verify.error_ratio}")
    out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tolerance_separation.json"))
