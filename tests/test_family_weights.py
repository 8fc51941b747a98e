"""The template proposer learns where each family wins: exploration slots follow the families'
best scores at shapes of similar size, and a family with no record there stays neutral. It also
learns what does not build: a point refused at build is not proposed again in another walk order
or at another shape with the same partial edges."""

import random

import pytest

from cudal2.kernels.family import Limits, get_family
from cudal2.problem import Problem
from cudal2.search.population import Population
from cudal2.search.proposers import FLOOR, TemplateProposer, family_weights, structure_weights


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



P = Problem(8192, 8192, 12288)
BAD = dict(BM=256, BN=144, CONSUMERS=2, STAGES=3, GROUP_M=8, EPI="tma", SCHED="hybrid")


@pytest.fixture(scope="module")
def sm90raw_proposer():
    return TemplateProposer([get_family("sm90raw")], Limits(), explore=1.0)   # ranks P's points once


def refused(pop: Population, p: Problem, family: str, params: dict,
            why: str = "sass: a predicate computed from the parameter bank's address") -> None:
    i = pop.add(p, f"{family}-refused", f"int refused_{len(pop.members(p))};", f"r{p}{params}{why}", family, params,
                None, "template", 1)
    pop.record(i, False, "build", None, why)


def test_a_point_refused_at_build_is_not_proposed_again_in_another_walk_order_or_shape(tmp_path, sm90raw_proposer):
    fam = get_family("sm90raw")
    bad = fam.complete(BAD)
    pop = Population(str(tmp_path / "p.sqlite"))
    refused(pop, Problem(8192, 8192, 8192), "sm90raw", bad)     # the same edges as P: K and M whole, N partial
    assert fam.invalid({**bad, "GROUP_M": 16}, P, Limits()) is None
    siblings = {fam.build_class({**bad, "GROUP_M": g, "ORDER": o}, P) for g in (1, 4, 8, 16) for o in ("grouped", "hilbert")}
    assert len(siblings) == 1
    out = sm90raw_proposer.propose(P, pop, 48, random.Random(0))
    assert out and not any(fam.build_class(o.params, P) in siblings for o in out)
    # where N is a whole number of 144-wide tiles, the edge code differs: another class, tried there
    assert fam.build_class(bad, Problem(8192, 144 * 57, 12288)) not in siblings


def test_a_point_that_failed_verification_or_timed_out_building_is_still_proposed(tmp_path, sm90raw_proposer):
    fam = get_family("sm90raw")
    pop = Population(str(tmp_path / "p.sqlite"))
    i = pop.add(Problem(8192, 8192, 8192), "x", "int wrong;", "hw", "sm90raw", fam.complete(BAD), None, "template", 1)
    pop.record(i, False, "verify", None, "wrong answer")
    refused(pop, Problem(8192, 8192, 8192), "sm80", {"BM": 128})          # another family's refusal
    refused(pop, Problem(8192, 8192, 8192), "sm90raw", fam.complete(BAD), "build timed out after 600 s")  # transient
    cls = fam.build_class(BAD, P)
    # BAD's class is not its plan's best structure: it comes after P's ~100 plans' bests
    out = sm90raw_proposer.propose(P, pop, 160, random.Random(0))
    assert any(fam.build_class(o.params, P) == cls for o in out)


def test_a_first_round_covers_a_structure_per_slot_before_any_walk_order_twice(tmp_path, sm90raw_proposer):
    # The prior ties walk orders and grid sizes: ranked by prior alone, a round of 16 went to two
    # tile shapes in eight walk orders each (2026-12-06, 512x16384x4096).
    fam = get_family("sm90raw")
    out = sm90raw_proposer.propose(P, Population(str(tmp_path / "p.sqlite")), 16, random.Random(0))
    assert len(out) == 16 and len({fam.structure(o.params) for o in out}) == 16
    prior = {fam.structure(x): fam.prior(x, P, Limits()) for x in reversed(sm90raw_proposer.ranked(fam, P))}
    best = max(prior.values())
    assert any(fam.prior(o.params, P, Limits()) == best for o in out[:2])   # the prior's best still leads


def test_a_first_round_covers_plans_before_the_variants_within_them(tmp_path, sm90raw_proposer):
    # At this tall, narrow, long-K shape the prior ranks 64x64 tiles' stage counts, clusters and
    # epilogues above any split: by structure alone, a round of 16 held no split-K point.
    fam, p = get_family("sm90raw"), Problem(4096, 128, 12288)
    out = sm90raw_proposer.propose(p, Population(str(tmp_path / "p.sqlite")), 16, random.Random(0))
    assert len({fam.plan(o.params) for o in out}) == 16
    assert any(o.params["SPLIT_K"] > 1 for o in out)


def test_structure_ignores_only_the_tuning_parameters():
    fam = get_family("sm90raw")
    a = fam.complete(BAD)
    assert fam.structure({**a, "GROUP_M": 16, "ORDER": "hilbert", "MAX_CTAS": 128}) == fam.structure(a)
    assert all(fam.structure({**a, k: v}) != fam.structure(a)
               for k, vals in fam.space.items() if k not in fam.tuning_params for v in vals if v != a[k])


def test_a_structure_that_lost_at_a_similar_shape_is_explored_after_untried_ones(tmp_path, sm90raw_proposer):
    fam = get_family("sm90raw")
    pop = Population(str(tmp_path / "p.sqlite"))
    near = Problem(8192, 8192, 8192)                      # within BAND of P's FLOPs
    first = [fam.complete(x) for x in sm90raw_proposer.ranked(fam, P)[:2]]   # the prior's two best structures
    won, lost = first
    for params, score in ((won, 1.03), (lost, 0.80)):
        i = pop.add(near, "x", f"int k_{score};", f"h{score}", "sm90raw", params, None, "template", 1)
        pop.record(i, True, "done", score)
    w = structure_weights(fam, P, pop)
    assert w[fam.structure(won)] == 1.0 and abs(w[fam.structure(lost)] - 0.80 / 1.03) < 1e-9
    out = sm90raw_proposer.propose(P, pop, 16, random.Random(0))
    structures = [fam.structure(o.params) for o in out]
    assert fam.structure(won) in structures[:2] and fam.structure(lost) not in structures
    far = Population(str(tmp_path / "far.sqlite"))       # the same record at a shape of another size: no say
    i = far.add(Problem(256, 256, 256), "x", "int k;", "h", "sm90raw", lost, None, "template", 1)
    far.record(i, True, "done", 0.1)
    assert structure_weights(fam, P, far) == {}
