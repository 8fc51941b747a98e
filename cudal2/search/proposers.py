"""Proposers: where candidate sources come from. The search loop asks each for a few per round.

Guarantees: a proposer returns complete candidate sources with their provenance (family and
parameters for templates; model and prompt hash for the LLM proposer of a later stage); it never
returns a point its family marks invalid, nor one the population already holds; the template
proposer first draws from the family spaces by a cheap prior (wave quantization, arithmetic
intensity), each plan's best point first (tile shape, split and schedule: `Family.plan`), then
each other structure's best before any structure's second (`spread`: the prior barely tells walk
orders and grid sizes apart, and ranks a plan's stage counts and epilogues close together; rounds
of 16 once went to two tile shapes in eight walk orders, and to one tile shape's variants while
split-K went untried), then spends most of each round mutating the best candidates so far, one
parameter one step at a time; its exploration learns where each family wins: slots go to families in
proportion to their best scores so far at shapes of similar size (`family_weights`, over every
shape the population has judged), so a family that keeps losing in a size band is tried less
there but never dropped; and within a family, where its structures win (`structure_weights`: a
structure that scored below its family's best at shapes of similar size has its prior scaled by
that ratio, so one that keeps losing is explored after those that have not been tried). It also
learns what does not build: a point whose `build_class` (its parameters less the walk order, and
which shape edges its tiles leave partial) failed to build at any shape is not proposed again
(the judge's machine-code checks refuse what ptxas makes of some points on some toolkits, which
the family's rules cannot foresee).

Does not: evaluate anything or keep state between rounds beyond what the population records.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from typing import Any, Protocol

from cudal2.kernels.family import Family, Limits
from cudal2.problem import Problem, parse_mnk
from cudal2.search.population import Population


@dataclass
class Proposal:
    name: str
    source: str
    proposer: str
    family: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    parent: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


class Proposer(Protocol):
    name: str

    def propose(self, p: Problem, pop: Population, n: int, rng: random.Random) -> list[Proposal]: ...


def _key(family: str, params: dict) -> str:
    return family + json.dumps(params, sort_keys=True)


BAND = 2.0   # shapes within this many powers of two of FLOPs count as "similar size"
FLOOR = 0.1  # the least exploration weight a family keeps


def _similar(shape: str, p: Problem) -> bool:
    """Whether the population's shape "MxNxK" is within BAND powers of two of `p`'s FLOPs."""
    M, N, K = (int(x) for x in shape.split("x"))
    return abs(math.log2(2 * M * N * K) - math.log2(p.flops)) <= BAND


def family_weights(p: Problem, pop: Population, families: list[str]) -> dict[str, float]:
    """Per family, the mean of its best scores over judged shapes within BAND powers of two of
    `p`'s FLOPs (1.0, neutral, where it has none), floored at FLOOR."""
    seen: dict[str, list[float]] = {f: [] for f in families}
    for fam, shape, best in pop.family_bests():
        if fam in seen and _similar(shape, p):
            seen[fam].append(best)
    return {f: max(FLOOR, sum(v) / len(v)) if v else 1.0 for f, v in seen.items()}


def spread(points: list[tuple[str, str, dict]]) -> list[dict]:
    """(plan, structure, point) triples, best first, as points reordered so that every plan's best
    point (`Family.plan`) comes first, then every other structure's best (`Family.structure`), then
    every structure's second, and so on; the given order within each tier."""
    plans: set[str] = set()
    seen: dict[str, int] = {}
    tiered = []
    for plan, st, x in points:
        seen[st] = seen.get(st, 0) + 1
        tiered.append((0 if plan not in plans else seen[st], x))
        plans.add(plan)
    return [x for _, x in sorted(tiered, key=lambda t: t[0])]   # stable: the given order within a tier


def structure_weights(fam: Family, p: Problem, pop: Population) -> dict[str, float]:
    """Per structure of `fam` judged at shapes within BAND powers of two of `p`'s FLOPs: the mean,
    over those shapes, of its best score there over the family's best there (1.0 for the
    structure that won), floored at FLOOR. Structures with no record are absent (weight 1.0)."""
    best: dict[str, float] = {}
    per: dict[tuple[str, str], float] = {}
    for shape, params, score in pop.judged_points(fam.name):
        if score <= 0 or not _similar(shape, p):
            continue
        best[shape] = max(best.get(shape, 0.0), score)
        k = (fam.structure(params), shape)
        per[k] = max(per.get(k, 0.0), score)
    ratios: dict[str, list[float]] = {}
    for (st, shape), score in per.items():
        ratios.setdefault(st, []).append(score / best[shape])
    return {st: max(FLOOR, sum(v) / len(v)) for st, v in ratios.items()}


class TemplateProposer:
    name = "template"

    def __init__(self, families: list[Family], limits: Limits, explore: float = 0.25):
        self.families, self.limits, self.explore = families, limits, explore
        self._priced: dict[tuple[str, str], list[tuple[float, str, str, dict]]] = {}   # (prior, plan, structure, point)

    def ranked(self, fam: Family, p: Problem, weights: dict[str, float] | None = None) -> list[dict]:
        """Valid points of `fam` for `p`, best prior (times its structure's weight) first, plans before
        the other structures within them, structures before their tunings (the points and their
        priors are computed once per shape)."""
        k = (fam.name, str(p))
        if k not in self._priced:
            self._priced[k] = [(fam.prior(x, p, self.limits), fam.plan(x), fam.structure(x), x)
                               for x in fam.valid_points(p, self.limits)]
        w = weights or {}
        order = sorted(self._priced[k], key=lambda t: -t[0] * w.get(t[2], 1.0))
        return spread([(plan, st, x) for _, plan, st, x in order])

    def propose(self, p: Problem, pop: Population, n: int, rng: random.Random) -> list[Proposal]:
        members = pop.members(p)
        tried = {_key(m.family, m.params) for m in members}
        fams = {f.name: f for f in self.families}
        refused = {fams[f].build_class(x, parse_mnk(shape)) for f, shape, x in pop.build_failures() if f in fams}
        out: list[Proposal] = []

        def take(fam: Family, params: dict, parent: int | None) -> None:
            k = _key(fam.name, params)
            if k in tried or fam.invalid(params, p, self.limits) is not None:
                return
            if fam.build_class(params, p) in refused:
                return
            tried.add(k)
            name = f"{fam.name}-" + "-".join(f"{v}" for v in params.values())
            out.append(Proposal(name, fam.render(params, p), self.name, fam.name, dict(params), parent))

        best = [m for m in pop.best(p, 4) if m.family in fams]
        n_mutate = 0 if not best else n - max(1, round(n * self.explore))
        for parent in best:  # exploit: neighbours of the best, best parent first
            for params in fams[parent.family].neighbors(parent.params, rng):
                if len(out) >= n_mutate:
                    break
                take(fams[parent.family], params, parent.id)
        # explore: the untried points with the best prior, families drawn by where they have won so
        # far, a little shuffled
        queues = [[x for x in self.ranked(f, p, structure_weights(f, p, pop)) if _key(f.name, x) not in tried][: 4 * n]
                  for f in self.families]
        for q in queues:
            # Swap neighbours at random so ties and near-ties in the prior do not always go the same way.
            for i in range(0, len(q) - 1, 2):
                if rng.random() < 0.3:
                    q[i], q[i + 1] = q[i + 1], q[i]
        w = family_weights(p, pop, [f.name for f in self.families])
        while len(out) < n and any(queues):
            live = [i for i, q in enumerate(queues) if q]
            i = rng.choices(live, weights=[w[self.families[j].name] for j in live])[0]
            take(self.families[i], queues[i].pop(0), None)
        return out
