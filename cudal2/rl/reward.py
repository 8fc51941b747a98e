"""Reward shaping: the judge's verdict on one completion becomes one number (or None).

Guarantees (`shape`):
- gate, then bound: a completion that fails anywhere (parse, policy, build, load, any check, the
  sanity check that catches impossible times, a hang or crash of its own) gets `floor`; only a
  verified kernel earns more, `verified` plus (1 - `verified`) x min(speedup, cap) / cap, plus
  at most `ncu_weight` for the optional Nsight Compute term (clipped to [0, 1]);
- compiling alone earns nothing more than the floor; a speedup that is not a finite positive
  number (which the judge's sanity check should make impossible) earns the floor too, so no
  reward is ever NaN or infinite;
- an infrastructure fault (the harness's own error, no GPU to judge on, a build whose sandbox did
  not start) returns None, never a penalty: TRL gives a row whose rewards are all None an advantage of 0;
- `RewardParts` keeps every part (stage, compiled, verified, speedup, ncu, reason) for the trace.

Does not: run anything (see `service.py`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from cudal2.config import TrainConfig
from cudal2.result import EvalResult, Stage

# Stages at or past which the source compiled.
_COMPILED = {s.value for s in Stage} - {Stage.PARSE.value, Stage.POLICY.value, Stage.BUILD.value}


@dataclass
class RewardParts:
    reward: float | None
    stage: str
    compiled: bool
    verified: bool
    speedup: float | None = None
    ncu: float | None = None
    reason: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def shape(cfg: TrainConfig, stage: str, ok: bool, speedup: float | None = None, ncu: float | None = None,
          infra: bool = False, reason: str = "") -> RewardParts:
    compiled = stage in _COMPILED or (stage == Stage.BUILD.value and ok)
    if infra:
        return RewardParts(None, stage, compiled, False, None, None, reason or "infrastructure fault: no reward")
    if not ok or stage != Stage.DONE.value or speedup is None:
        return RewardParts(cfg.floor, stage, compiled, False, None, None, reason)
    if not math.isfinite(speedup) or speedup <= 0:
        # the sanity check's floor should make this impossible; a NaN reward would poison the
        # whole group's advantages, so the gate holds even if a timing path lets one through
        return RewardParts(cfg.floor, stage, compiled, False, None, None, f"unusable speedup {speedup!r}")
    if ncu is not None and not math.isfinite(ncu):
        ncu = None
    term = min(max(speedup, 0.0), cfg.speedup_cap) / cfg.speedup_cap
    extra = cfg.ncu_weight * min(max(ncu, 0.0), 1.0) if (ncu is not None and cfg.ncu_weight) else 0.0
    return RewardParts(cfg.verified + (1.0 - cfg.verified) * term + extra, stage, True, True, speedup, ncu, reason)


def from_result(cfg: TrainConfig, r: EvalResult) -> RewardParts:
    """The parts of a judged result (its score: the geomean over modes of speedup vs vendor_default)."""
    from cudal2.search.score import score
    infra = "harness_traceback" in r.checks
    pct = (r.profile or {}).get("summary", {}).get("tensor_pipe_pct")   # Nsight Compute, 0-100
    ncu = pct / 100.0 if isinstance(pct, (int, float)) else None
    return shape(cfg, r.stage.value, r.ok, score(r) if r.ok else None, ncu, infra, r.reason)
