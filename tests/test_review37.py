"""Review 37 (CPU): the general-task judge's worker hygiene, the sizes it verifies at, and the
inputs of the softmax tasks."""

import pytest
import torch

from cudal2.harness import task_judge, worker as worker_mod
from cudal2.harness.task_judge import TaskFailed, judge_task, within
from cudal2.rl import general


class _Mod:
    def __init__(self):
        self.closed = False

    def close(self):
        self.closed = True


def _fake(exc=None, mod=None):
    def run(*args, **kw):
        held = args[-1] if args and isinstance(args[-1], list) else kw.get("held")
        if mod is not None and held is not None:
            held.append(mod)
        if exc is not None:
            raise exc
        return {"ok": True}
    return run


@pytest.fixture
def exits(monkeypatch):
    calls = []
    monkeypatch.setattr(worker_mod, "request_exit", lambda: calls.append(1))
    return calls


@pytest.mark.parametrize("reason", ["hang: still running after 10.0 s", "CUDA error: cudaErrorIllegalAddress"])
def test_a_fault_in_the_task_judge_replaces_its_worker(monkeypatch, exits, reason):
    mod = _Mod()
    monkeypatch.setattr(task_judge, "_judge", _fake(TaskFailed("verify", reason, fault=True), mod))
    r = judge_task("x.cubin", {}, "ew-relu", None)
    assert r["ok"] is False and r["stage"] == "verify"
    assert exits, "a hang or sticky CUDA error must end the worker process"
    assert not mod.closed, "a module whose kernel may still run is left to the dying process"


def test_an_exception_of_the_task_judge_replaces_its_worker(monkeypatch, exits):
    monkeypatch.setattr(task_judge, "_judge", _fake(RuntimeError("CUDA error: an illegal memory access")))
    with pytest.raises(RuntimeError):
        judge_task("x.cubin", {}, "ew-relu", None)
    assert exits


def test_a_plain_verdict_keeps_the_worker_and_unloads_the_module(monkeypatch, exits):
    for exc in (TaskFailed("verify", "3 of 9 outputs outside the tolerance"), None):
        mod = _Mod()
        monkeypatch.setattr(task_judge, "_judge", _fake(exc, mod))
        judge_task("x.cubin", {}, "ew-relu", None)
        assert mod.closed, "nothing of one candidate outlives its judging"
    assert not exits


def job(kind: str) -> dict:
    """Run in a worker child: judge_task over a stand-in judge that fails as `kind` says."""
    exc = {"hang": TaskFailed("verify", "hang: still running", fault=True),
           "wrong": TaskFailed("verify", "1 of 4 outputs outside the tolerance")}[kind]
    task_judge._judge = _fake(exc)
    return judge_task("x.cubin", {}, "ew-relu", None)


def test_the_worker_is_replaced_after_a_hang_verdict_end_to_end():
    with worker_mod.Worker() as w:
        o = w.run("tests.test_review37:job", "wrong")
        assert o.ok and o.value["stage"] == "verify" and w.restarts == 0
        o = w.run("tests.test_review37:job", "hang")
        assert o.ok and o.value["reason"].startswith("hang")
        assert w.restarts == 1, "the process that saw a hang must not judge the next candidate"


def _no_max_softmax(x):
    e = torch.exp(x.float())
    return (e / e.sum(-1, keepdim=True)).half()


def _no_max_log_softmax(x):
    return (x.float() - torch.log(torch.exp(x.float()).sum(-1, keepdim=True))).half()


@pytest.mark.parametrize("task_id,cand,sizes", [
    ("row-softmax", _no_max_softmax, {"rows": 256, "cols": 4096}),
    ("row-online-softmax", _no_max_softmax, {"rows": 64, "cols": 1 << 14}),
    ("row-log-softmax", _no_max_log_softmax, {"rows": 256, "cols": 4096}),
])
def test_a_softmax_without_the_max_subtraction_fails_on_the_tasks_inputs(task_id, cand, sizes):
    """tests/kernels/tasks/zz37_softmax_no_max.cu, emulated: exact on standard normal rows, so the
    task's inputs must reach values where exp overflows (or every term underflows)."""
    t = general.BY_ID[task_id]
    for seed in range(3):
        x = general.inputs(t, sizes, torch.Generator().manual_seed(seed))
        (ref,) = t.reference(**x)
        ok, why = within(cand(**x), ref, t.tolerance.kind)
        assert not ok, f"seed {seed}: {why}"
        # ... while the honest computation still passes
        m = x["x"].float().amax(-1, keepdim=True)
        e = torch.exp(x["x"].float() - m)
        honest = (e / e.sum(-1, keepdim=True)).half() if "log" not in task_id else \
            (x["x"].float() - m - torch.log(e.sum(-1, keepdim=True))).half()
        assert within(honest, ref, t.tolerance.kind)[0]


@pytest.mark.parametrize("task", general.SUITE, ids=lambda t: t.id)
@pytest.mark.parametrize("draw", range(3))
def test_the_judge_has_a_second_size_set_no_tile_divides(task, draw):
    """tests/kernels/tasks/zz37_relu_fixed_size.cu (a literal grid, no tail) passed when the judge
    verified at the task's sizes alone; `tail_sizes` is the second set it now verifies at."""
    from cudal2.harness import launch
    import random

    from cudal2.rl.general import tail_sizes
    tail = tail_sizes(task, random.Random(draw))
    assert set(tail) == set(task.sizes)
    for k, v in tail.items():
        assert 0 < v < task.sizes[k]
        assert v % 2 == 1 or (k == "d" and v == 2 * tail["half"]), (k, v)
    # the reference solution's spec resolves there, and the suite's reference computes it
    ref = (general.Path if hasattr(general, "Path") else __import__("pathlib").Path)(general.__file__).parent
    spec = launch.parse((ref / "references" / f"{task.id}.cu").read_text())
    assert spec.resolve_sizes(tail)


def test_the_task_judge_verifies_at_the_tail_sizes():
    import inspect
    src = inspect.getsource(task_judge._judge)
    assert "tail_sizes(task)" in src and "_Setup(task, tail," in src
