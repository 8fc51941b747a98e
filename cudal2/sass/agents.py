"""Agents for the assembly game: greedy and simulated annealing over `game.Game` (PPO: `ppo.py`).

    result = greedy(game, Budget(seconds=600))      # or anneal(game, Budget(measurements=200))
    result.orders, result.gain, result.gain_repeat, result.reproduced, result.stats

Guarantees:
- both only ever move through states the legality checker accepted (they act through
  `Game.apply`, which refuses what the mask refuses); the schedule they return is one of those
  states, or the original when nothing measured better;
- greedy: per step, a sample of the legal moves (`candidates` of them, loop blocks first) is
  measured; the best is measured once more, fresh, and taken only if that second number also
  beats the current gain by `min_step` (one noisy maximum over many moves runs high); it stops
  when no move improves, or at the budget (a step under way finishes: at most one measurement
  past it, plus the final repeat);
- anneal: a random legal neighbour per step, measured and accepted by the Metropolis rule on
  the gain, the temperature falling geometrically from `t_start` to `t_end` over the budget;
  the `finalists` best distinct states seen are kept;
- the end: each finalist is measured a second time, fresh, and the agent ends in the one whose
  smaller number is largest (`gain`, `gain_repeat`); `reproduced` is True only when both
  numbers reach `min_gain`. Nothing here publishes anything;
- cost: `result.stats` counts the schedules the checker judged and rejected, the measurements
  (each a GPU timing), their wall seconds, and the schedules the GPU refused after the checker
  passed them (`gpu_failed`, which should stay 0);
- deterministic given `seed` and a deterministic `measure`.

Does not:
- PPO: that agent is `cudal2.sass.ppo` (torch), registered here as "ppo";
- estimate noise: `min_step` and `min_gain` are the caller's (`cudal2 sass` sets them from
  the repeat spread it reports).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

from cudal2.sass.game import Game


@dataclass
class Budget:
    """When an agent stops: after `measurements` calls of measure, or `seconds` of wall time
    (whichever comes first; None: no limit of that kind, but give at least one)."""
    measurements: int | None = None
    seconds: float | None = None

    def __post_init__(self):
        if self.measurements is None and self.seconds is None:
            raise ValueError("a budget needs measurements or seconds")

    def start(self, game: Game) -> tuple[float, int]:
        return time.monotonic(), game.stats.measured

    def spent(self, game: Game, since: tuple[float, int]) -> float:
        """The fraction used since `start` (the larger of the two)."""
        t0, m0 = since
        f = 0.0
        if self.measurements is not None:
            f = max(f, (game.stats.measured - m0) / max(1, self.measurements))
        if self.seconds is not None:
            f = max(f, (time.monotonic() - t0) / max(1e-9, self.seconds))
        return f


@dataclass
class AgentResult:
    agent: str
    kernel: str
    orders: dict[int, list[int]]         # changed blocks: block index -> original indices, top to bottom
    displaced: int                       # instructions not at their original position
    gain: float                          # best measured gain (0.0: the original)
    gain_repeat: float | None            # the same schedule measured again, fresh (None: not measured)
    reproduced: bool
    stats: dict = field(default_factory=dict)
    seconds: float = 0.0
    trace: list[tuple[int, float]] = field(default_factory=list)   # (measurements so far, best gain)

    def to_dict(self) -> dict:
        return {**self.__dict__, "orders": {str(k): v for k, v in self.orders.items()}}


def _finish(name: str, game: Game, finalists: list[tuple[float, dict]], min_gain: float, since: tuple,
            trace: list) -> AgentResult:
    """Measure each finalist (gain, orders) again, fresh, and end in the one whose smaller
    number is largest; the original when there is none."""
    best = (0.0, {}, None)   # (gain, orders, repeat)
    for gain, orders in finalists:
        if not orders:
            continue
        game.set_orders(orders)
        repeat = game.evaluate(fresh=True)
        if repeat is not None and (best[2] is None or min(gain, repeat) > min(best[0], best[2])):
            best = (gain, orders, repeat)
    gain, orders, repeat = best
    game.set_orders(orders)
    ok = bool(orders) and gain >= min_gain and repeat is not None and repeat >= min_gain
    return AgentResult(name, game.kernel, game.orders(), game.displaced(), gain, repeat, ok, game.stats.to_dict(),
                       time.monotonic() - since[0], trace)


def _keep_best(top: list[tuple[float, dict]], gain: float, game: Game, finalists: int, trace: list) -> list:
    """`top` (the best distinct states measured, (gain, orders), best first, at most `finalists`)
    with the game's current state in it if it earns a place; a new best goes to `trace`."""
    orders = game.orders()
    if gain > 0 and (len(top) < finalists or gain > top[-1][0]) and all(o != orders for _, o in top):
        top = sorted(top + [(gain, orders)], key=lambda x: -x[0])[:finalists]
        trace.append((game.stats.measured, top[0][0]))
    return top


def _prefer_loops(game: Game, actions: list[int], k: int, rng: random.Random) -> list[int]:
    """Up to k actions: those in loop blocks first (where the time goes), each group shuffled."""
    inner = [a for a in actions if game.block_at[a // 2] in game.loop_blocks]
    outer = [a for a in actions if game.block_at[a // 2] not in game.loop_blocks]
    rng.shuffle(inner)
    rng.shuffle(outer)
    return (inner + outer)[:k]


def greedy(game: Game, budget: Budget, candidates: int = 32, min_step: float = 0.0, min_gain: float = 0.01,
           seed: int = 0) -> AgentResult:
    rng = random.Random(seed)
    since = budget.start(game)
    game.reset()
    current, best = 0.0, {}
    trace = [(0, 0.0)]
    while budget.spent(game, since) < 1.0:
        moves = _prefer_loops(game, game.legal_swaps(), candidates, rng)
        if not moves:
            break
        top = None
        for a in moves:
            if budget.spent(game, since) >= 1.0:
                break
            game.apply(a)
            g = game.evaluate()
            game.undo(a)
            if g is not None and (top is None or g > top[1]):
                top = (a, g)
        if top is None or top[1] <= current + min_step:
            break
        game.apply(top[0])
        again = game.evaluate(fresh=True)          # the maximum of many noisy numbers runs high
        if again is None or min(top[1], again) <= current + min_step:
            game.undo(top[0])
            break
        current, best = min(top[1], again), game.orders()
        trace.append((game.stats.measured, current))
    return _finish("greedy", game, [(current, best)], min_gain, since, trace)


def anneal(game: Game, budget: Budget, t_start: float = 0.01, t_end: float = 0.0005, min_gain: float = 0.01,
           seed: int = 0, finalists: int = 3) -> AgentResult:
    """Temperatures are in units of gain (0.01: a 1% slowdown is accepted with probability 1/e).
    The `finalists` best distinct states seen are measured again at the end (one noisy maximum
    runs high; its neighbours in the ranking may be the real winners)."""
    rng = random.Random(seed)
    since = budget.start(game)
    game.reset()
    current, top = 0.0, []      # top: the best states seen, (gain, orders), best first
    trace = [(0, 0.0)]
    stale = 0   # steps in a row that measured nothing new (every neighbour already cached)
    while (spent := budget.spent(game, since)) < 1.0 and stale < 1000:
        moves = game.legal_swaps()
        if not moves:
            break
        a = rng.choice(moves)
        game.apply(a)
        n = game.stats.measured
        g = game.evaluate()
        stale = 0 if game.stats.measured > n else stale + 1
        if g is None:
            game.undo(a)
            continue
        temp = t_start * (t_end / t_start) ** min(1.0, spent)
        if g >= current or rng.random() < math.exp((g - current) / temp):
            current = g
            top = _keep_best(top, g, game, finalists, trace)
        else:
            game.undo(a)
    return _finish("anneal", game, top, min_gain, since, trace)


def _ppo(game: Game, budget: Budget, **kw) -> AgentResult:
    from cudal2.sass.ppo import ppo   # torch, imported only when this agent plays
    return ppo(game, budget, **kw)


AGENTS = {"greedy": greedy, "anneal": anneal, "ppo": _ppo}
