"""The carried calls' slots, on the CPU: the judge's Trial moves A and C over its slots as a model's
forward pass hands the library other buffers, checks every A it drew since the fill (a nudged one
as nudged), and leaves nothing in the other slots once it settles (review 55). The buffers are
numpy arrays here, filled from their seed; the GPU runs the same bookkeeping on cupy arrays."""

import types

import numpy as np
import pytest

from cudal2.harness import judge
from cudal2.problem import Problem


class Arena:
    def __init__(self, sizes):
        self.sizes = list(sizes)
        self.raw = [np.zeros(s // 2, np.float16) for s in sizes]

    def view(self, i, dtype, shape):
        return self.raw[i].reshape(shape)

    def ptr(self, i):
        return i


@pytest.fixture
def trial(monkeypatch):
    def fill(x, dist, seed):
        x[...] = np.random.default_rng(seed).standard_normal(x.shape).astype(np.float16)

    def matches(x, dist, seed):
        want = np.empty_like(x)
        fill(want, dist, seed)
        return bool((x.view(np.uint16) == want.view(np.uint16)).all())
    seeds = iter(range(1000, 9000, 7))
    arenas = []

    def randomize_at(i, nbytes):
        arenas[0].raw[i][...] = np.random.default_rng(7).standard_normal(arenas[0].raw[i].shape)

    monkeypatch.setattr(judge, "buffers", types.SimpleNamespace(
        fill=fill, matches=matches, new_seed=lambda: next(seeds), randomize_at=randomize_at,
        Arena=lambda sizes, gap: arenas.append(Arena(sizes)) or arenas[-1]))
    monkeypatch.setattr(judge, "cp", types.SimpleNamespace(empty_like=np.empty_like, float16=np.float16,
                                                           where=np.where))
    monkeypatch.setattr(judge.compare, "bitwise", lambda a, b: (bool((a == b).all()), {}))
    t = judge.Trial.make(Problem(4, 8, 16), 64, 0)
    t.fill("normal")
    return t


def test_rotation_visits_every_slot_with_new_contents_and_keeps_b(trial):
    b = trial.b.copy()
    seen = {trial.ptrs[0]: trial.a.copy()}
    for _ in range(judge.Trial.SLOTS):
        trial.rotate()
        assert not any(np.array_equal(trial.a, old) for old in seen.values())
        seen[trial.ptrs[0]] = trial.a.copy()
    assert len(seen) == judge.Trial.SLOTS and np.array_equal(trial.b, b)
    regions = [trial._region(x, s) for s in range(judge.Trial.SLOTS) for x in "AC"]
    assert len(set(regions)) == len(regions) and 1 not in regions and 3 not in regions   # B, the workspace


def test_an_a_the_calls_moved_on_from_is_still_checked(trial):
    trial.rotate()
    assert trial.inputs_intact()
    trial.a_at(0)[0, 0] = 0   # the previous call's activation, zeroed by a later call
    assert not trial.inputs_intact()


def test_a_nudged_a_stays_intact_after_the_calls_move_on(trial):
    trial.nudge()
    assert trial.nudged and trial.inputs_intact()
    trial.rotate()
    assert trial.nudged is None and trial.inputs_intact()   # slot 0 still holds its nudge, as recorded


def test_settling_overwrites_the_other_slots_and_returns_to_the_first(trial):
    trial.rotate()
    kept = trial.a.copy()
    trial.settle()
    assert trial.slot == 0 and not np.array_equal(trial.a_at(1), kept)


@pytest.mark.parametrize("whole", [True, False])
def test_b_changed_in_place_is_checked_as_changed(trial, whole):
    # rewritten whole (an optimizer step) or one element moved (a LoRA merge, a sparse update)
    assert trial.inputs_intact()
    old = trial.b.copy()
    trial.new_b(whole=whole)
    changed = int((trial.b != old).sum())
    assert (changed > 1 if whole else changed == 1) and trial.inputs_intact()
    trial.b[trial.b == trial.b.flat[0]] += 1
    assert not trial.inputs_intact()


def test_the_carried_calls_run_in_order_and_record_each_check(trial):
    # the sequence, with the GPU's calls and checks replaced by records: one prepared call, the
    # identical carried calls and the nudged one, then the rotated calls with B changed before one
    from cudal2.config import Config
    j = object.__new__(judge.Judge)
    j.cfg = Config()
    calls, checks = [], []
    j.call = lambda t, stage, carried=False: calls.append((carried, t.slot))
    j.tolerance_check = lambda a, b, c, vendor, stage, key, **info: checks.append(info)
    j.carried_calls(trial, vendor=None, key="k")
    assert calls[0] == (False, 0) and all(kept for kept, _ in calls[1:]) and len(calls) == len(checks)
    assert checks[0]["carried"] == 0 and any(c.get("nudged") for c in checks)
    rotated = [c for c in checks if "rotated" in c]
    assert len(rotated) >= judge.Trial.SLOTS + 1 and {c["slot"] for c in rotated} == set(range(judge.Trial.SLOTS))
    assert sum("new_b" in c for c in checks) == 1 and trial.slot == 0   # settled


def test_every_seed_since_a_fill_shares_its_upper_bits_and_marks_its_operand(trial, monkeypatch):
    # (the split modes divide the columns by a hash of the upper 32 bits and the operand bit: an A or
    # B drawn unpaired would let outliers of both meet at one column: review 74)
    import secrets
    monkeypatch.setattr(judge.buffers, "new_seed", lambda: secrets.randbits(63))
    trial.fill("normal")
    a_seeds = [trial.a_seeds[trial.slot]]
    for _ in range(judge.Trial.SLOTS):
        a_seeds.append(trial.rotate())
    b_seeds = [trial.b_seed]
    trial.new_b(whole=True)
    b_seeds.append(trial.b_seed)
    assert len({s >> 32 for s in a_seeds + b_seeds}) == 1 and trial.pair != 0
    assert all(s & 1 == 0 for s in a_seeds) and all(s & 1 == 1 for s in b_seeds)
    assert len(set(a_seeds)) == len(a_seeds) and b_seeds[0] != b_seeds[1]


def test_a_chain_at_a_models_scales_keeps_them_through_its_rotations_and_new_b(trial, monkeypatch):
    # review 78: with unit-scale B in every carried call a several-call cheat could switch on only
    # where B was as small as a weight; the second chain draws A as an activation, B as a weight,
    # and every A and B it draws after the fill keeps those modes (and the fill's pair bits)
    from cudal2.config import Config
    drawn = []
    fill = judge.buffers.fill
    monkeypatch.setattr(judge.buffers, "fill", lambda x, dist, seed: drawn.append((x.shape, dist)) or fill(x, dist, seed))
    j = object.__new__(judge.Judge)
    j.cfg = Config()
    checks = []
    j.call = lambda t, stage, carried=False: None
    j.tolerance_check = lambda a, b, c, vendor, stage, key, **info: checks.append(info)
    assert "scaled" in judge.CARRIED_DISTS and judge.TRIAL_DISTS["scaled"] == ("act", "weight")
    j.carried_calls(trial, vendor=None, key="k", dist="scaled")
    a_shape, b_shape = trial.a.shape, trial.b.shape
    assert {d for s, d in drawn if s == a_shape} == {"act"} and {d for s, d in drawn if s == b_shape} == {"weight"}
    assert len([1 for s, _ in drawn if s == a_shape]) >= judge.Trial.SLOTS + 2   # the fill and every rotation
    assert all(c["dist"] == "scaled" for c in checks)
