"""Reward shaping: the judge's verdict on one completion becomes one number (or None).

Guarantees (`shape`):
- gate, then bound: a completion that fails anywhere (parse, policy, build, load, any check, the
  sanity check that catches impossible times, a hang or crash of its own) gets `floor`; only a
  verified kernel earns more, `verified` plus (1 - `verified`) x min(speedup, cap) / cap, plus
  at most `ncu_weight` for the optional Nsight Compute term (clipped to [0, 1]), which never
  exceeds what the verified speed accounts for (`verified_pipe`: review 71);
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


# How far an honest kernel's tensor-pipe share may exceed the fraction of peak its verified FLOP rate
# reaches: the peak assumes the boost clock, and a power-capped H100 runs below it (4096^3: the pipe
# ~94% busy at 75% of 989 TFLOP/s; 8192^3: 98% at 78%, a ratio of 1.26: eval/README.md's profile
# rows; review 72), so honest kernels keep their term, and padding buys at most the margin.
USEFUL_SLACK = 1.4


def verified_pipe(r: EvalResult) -> float | None:
    """The Nsight Compute term of a judged result: its tensor-pipe share (0-1), capped at USEFUL_SLACK
    times the fraction of peak its verified FLOP rate reaches in its best timed mode; None without a
    profile, a peak or a timed mode (no term: fail closed).

    Why the cap (review 71): the counter counts issued MMAs, useful or not, on one call whose output
    nothing checks. A kernel that spun on mma.sync where only the profile's inputs reach (unbounded
    normals; the judge's are not) read ~100% at its honest timed speed, worth up to ncu_weight; a
    spare warp issuing MMAs during memory stalls would do the same without any gate. Capped by the
    judge's own timings, useless work buys at most the slack. The price: a kernel whose MMAs are
    mostly padding (M = 1 on m16 tiles) keeps only the share its useful work earns."""
    pct = (r.profile or {}).get("summary", {}).get("tensor_pipe_pct")   # Nsight Compute, 0-100
    peak = (r.gpu or {}).get("peak_tflops")
    rates = [v for v in (r.tflops or {}).values() if isinstance(v, (int, float)) and math.isfinite(v)]
    if not isinstance(pct, (int, float)) or not isinstance(peak, (int, float)) or peak <= 0 or not rates:
        return None
    return min(pct / 100.0, USEFUL_SLACK * max(rates) / peak)


def from_result(cfg: TrainConfig, r: EvalResult) -> RewardParts:
    """The parts of a judged result (its score: the geomean over modes of speedup vs vendor_default)."""
    from cudal2.search.score import score
    infra = "harness_traceback" in r.checks
    return shape(cfg, r.stage.value, r.ok, score(r) if r.ok else None, verified_pipe(r), infra, r.reason)
