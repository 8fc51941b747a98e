"""The reward function TRL's GRPOTrainer calls, over a `RewardService`.

Guarantees: `make_reward(service)` returns `f(prompts, completions, **columns)` as TRL calls it
(conversational or plain completions; the dataset's M, N, K columns name each row's shape, or
a `task` column names a general task instead); it returns one float or None per completion, and logs through TRL's `log_metric` the fractions that
compiled and verified, the best speedup, the fraction of groups (rows of one prompt) whose
rewards have zero spread, and the distinct kernels judged, and through `log_extra` each
completion's stage and reason (the trace of every reward's parts).

Does not: judge (the service does) or train.
"""

from __future__ import annotations

from cudal2.problem import Problem
from cudal2.rl.service import RewardService


def _text(c) -> str:
    if isinstance(c, list):   # conversational: [{"role": "assistant", "content": ...}]
        return "".join(m.get("content", "") for m in c if isinstance(m, dict))
    return str(c)


def group_stats(prompts: list, rewards: list[float | None]) -> float:
    """Fraction of groups (completions of one prompt) whose non-None rewards have zero spread."""
    groups: dict[str, list[float]] = {}
    for p, r in zip(prompts, rewards):
        groups.setdefault(repr(p), [])
        if r is not None:
            groups[repr(p)].append(r)
    scored = [g for g in groups.values() if g]
    return sum(max(g) == min(g) for g in scored) / len(scored) if scored else 1.0


def make_reward(service: RewardService):
    def cudal2_judge(prompts, completions, M=None, N=None, K=None, task=None, log_metric=None, log_extra=None, **_):
        problems = list(task) if task else [Problem(int(m), int(n), int(k)) for m, n, k in zip(M, N, K)]
        parts = service.score([_text(c) for c in completions], problems)
        rewards = [p.reward for p in parts]
        if log_metric is not None:
            n = max(1, len(parts))
            log_metric("cudal2/compiled", sum(p.compiled for p in parts) / n)
            log_metric("cudal2/verified", sum(p.verified for p in parts) / n)
            log_metric("cudal2/best_speedup", max((p.speedup or 0.0) for p in parts) if parts else 0.0)
            log_metric("cudal2/zero_spread_groups", group_stats(prompts, rewards))
            log_metric("cudal2/judged_total", float(service.judged))
        if log_extra is not None:
            log_extra("stage", [p.stage for p in parts])
            log_extra("reason", [p.reason[:200] for p in parts])
        return rewards

    return cudal2_judge
