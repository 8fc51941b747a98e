"""The template proposer learns where each family wins: exploration slots follow the families'
best scores at shapes of similar size, and a family with no record there stays neutral."""

import random

from cudal2.kernels.family import Limits, get_family
from cudal2.problem import Problem
from cudal2.search.population import Population
from cudal2.search.proposers import FLOOR, TemplateProposer, family_weights


def judged(pop: Population, p: Problem, family: str, score: float, tag: str = "") -> None:
    i = pop.add(p, f"{family}{tag}", f"int {family.replace('-', '_')}_{tag}_{int(score * 100)};", f"h{family}{tag}{p}", family, {"x": tag}, None,
                "template", 1)
    pop.record(i, True, "done", score)


def test_weights_are_the_mean_best_score_at_similar_sizes(tmp_path):
    pop = Population(str(tmp_path / "p.sqlite"))
    judged(pop, Problem(4096, 4096, 4096), "sm90raw", 1.04)
    judged(pop, Problem(4096, 4096, 8192), "sm90raw", 0.96)
    judged(pop, Problem(4096, 4096, 4096), "sm80", 0.02)       # far below FLOOR
    judged(pop, Problem(64, 64, 64), "sm80", 1.9)              # another size band: does not count
    w = family_weights(Problem(4096, 4096, 2048), pop, ["sm80", "sm90raw", "sm90"])
    assert abs(w["sm90raw"] - 1.0) < 1e-9 and w["sm80"] == FLOOR and w["sm90"] == 1.0


def test_exploration_favours_the_family_that_wins_here(tmp_path):
    pop = Population(str(tmp_path / "p.sqlite"))
    for k in (512, 1024, 2048):
        judged(pop, Problem(128, 128, k), "sm80", 1.5, str(k))
    prop = TemplateProposer([get_family("sm80"), get_family("sm90raw")], Limits(), explore=1.0)
    out = prop.propose(Problem(128, 256, 1024), pop, 40, random.Random(0))
    fams = [o.family for o in out]
    assert fams.count("sm80") > fams.count("sm90raw") > 0
