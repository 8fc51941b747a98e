"""Training end to end on the GPU machine with a tiny offline model (no downloads).

  python eval/train_smoke.py --out DIR [--sft-steps 30] [--grpo-steps 10]
  python eval/train_smoke.py --out DIR --stage general [--grpo-steps 10]

1. Reward throughput: 32 distinct sm80 (contract v2) renders for one training shape, wrapped as
   completions, scored by the `RewardService` (parse, build, judge in the worker): rewards/min.
2. A tiny Llama built offline (tests/llm_fixtures.py) is warm-started by `cudal2 train --stage
   sft` on rendered seed kernels, then runs GRPO on stage matmul with the judge's rewards; the
   metrics and the reward plot go to DIR. Nothing is asserted: a measurement for eval/README.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudal2.config import Config  # noqa: E402
from cudal2.kernels.family import Limits, get_family  # noqa: E402
from cudal2.rl.service import RewardService  # noqa: E402
from cudal2.rl.train import grpo, plot, sft, step_metrics, train_tasks  # noqa: E402


def reward_throughput(cfg: Config) -> dict:
    t = train_tasks(cfg, 1)[0]
    fam = get_family("sm80")
    pts = sorted(fam.valid_points(t.problem, Limits()), key=lambda x: -fam.prior(x, t.problem, Limits()))[:32]
    texts = ["```cuda\n" + fam.render(x, t.problem) + "\n```" for x in pts]
    svc = RewardService(cfg)
    t0 = time.monotonic()
    parts = svc.score(texts, [t.problem] * len(texts))
    wall = time.monotonic() - t0
    svc.close()
    return {"shape": t.id, "completions": len(texts), "wall_s": wall, "rewards_per_min": 60 * len(texts) / wall,
            "verified": sum(p.verified for p in parts), "rewards": [p.reward for p in parts],
            "reasons": sorted({f"{p.stage}: {p.reason[:300]}" for p in parts}), "gpu": svc.gpu,
            "best_speedup": max((p.speedup or 0) for p in parts)}


def general(out: Path, cfg: Config, steps: int) -> None:
    """Stage general: GRPO from the tiny untrained model, every reward through the task judge."""
    from tests.llm_fixtures import tiny_model
    tiny = tiny_model(out / "tiny")
    t0 = time.monotonic()
    grpo(cfg, tiny, steps, out / "grpo_general", stage="general")
    summary = {"stage": "general", "grpo_s": time.monotonic() - t0, "grpo_steps": step_metrics(out / "grpo_general")}
    (out / "summary_general.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))


def main(out: Path, sft_steps: int, grpo_steps: int, stage: str = "matmul") -> None:
    from tests.llm_fixtures import tiny_model
    out.mkdir(parents=True, exist_ok=True)
    cfg = Config.load(build={"cache_dir": str(out / "cache")},
                      train={"num_generations": 4, "max_completion_length": 256, "save_steps": 100,
                             "learning_rate": 5e-4})
    if stage == "general":
        return general(out, cfg, grpo_steps)
    summary = {"reward_throughput": reward_throughput(cfg)}
    print(json.dumps(summary["reward_throughput"]), flush=True)
    tiny = tiny_model(out / "tiny")
    t0 = time.monotonic()
    sft(cfg, tiny, sft_steps, out / "sft")
    summary["sft_s"] = time.monotonic() - t0
    t0 = time.monotonic()
    grpo(cfg, str(out / "sft" / "final"), grpo_steps, out / "grpo")
    summary["grpo_s"] = time.monotonic() - t0
    summary["grpo_steps"] = step_metrics(out / "grpo")
    summary["plot"] = str(plot(out / "grpo"))
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "reward_throughput"}, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sft-steps", type=int, default=30)
    ap.add_argument("--grpo-steps", type=int, default=10)
    ap.add_argument("--stage", choices=["matmul", "general"], default="matmul",
                    help="general: GRPO only, on the task suite (no SFT, no reward-throughput run)")
    a = ap.parse_args()
    main(a.out, a.sft_steps, a.grpo_steps, a.stage)
