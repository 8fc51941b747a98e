"""Stage general's task suite as data (CPU): at least 40 tasks at three levels, a fixed held-out
split, and every torch reference runs on its own sampled inputs and returns the declared outputs."""

import pytest

torch = pytest.importorskip("torch")

from cudal2.rl import general as G  # noqa: E402

DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "i32": torch.int32, "i64": torch.int64}


def small(t):
    return {k: max(1, v // 64) for k, v in t.sizes.items()}   # a uniform shrink keeps the sizes' relations


def test_the_suite_has_forty_tasks_at_three_levels():
    ids = [t.id for t in G.SUITE]
    assert len(ids) >= 40 and len(set(ids)) == len(ids)
    assert all(sum(t.level == lv for t in G.SUITE) >= 5 for lv in (1, 2, 3))


def test_the_held_out_split_is_fixed_and_proper():
    held = [t.id for t in G.SUITE if G.split(t) == "heldout"]
    assert 0 < len(held) < len(G.SUITE) and held == [t.id for t in G.SUITE if G.split(t) == "heldout"]


@pytest.mark.parametrize("task", G.SUITE, ids=lambda t: t.id)
def test_each_reference_returns_its_declared_outputs(task):
    s = small(task)
    x = G.inputs(task, s, torch.Generator().manual_seed(0))
    outs = task.reference(**x)
    assert len(outs) == len(task.outputs)
    for o, b in zip(outs, task.outputs):
        assert tuple(o.shape) == tuple(s[d] for d in b.shape) and o.dtype == DT[b.dtype], b.name
    assert all(bool(v.ne(0).any()) for v in x.values() if v.is_floating_point())   # never timed on zeros


@pytest.mark.parametrize("task", G.SUITE, ids=lambda t: t.id)
def test_each_task_has_a_positive_time_floor(task):
    assert G.floor_s(task, 989e12, 3.35e12) > 0
