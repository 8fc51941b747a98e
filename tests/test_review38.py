"""Review 38 (CPU): a nonzero launch return after earlier launches of the same call were enqueued
(cuLaunchKernelEx's invalid value for a block z over 64, tests/kernels/*/zz38_*_then_invalid_launch.cu)
must not reach the verdict and the module's unload before those launches end: both judges
synchronize first, so a hang or a CUDA error there is a fault and the worker is replaced."""

import inspect
import re

import pytest

from cudal2.harness import launch


def test_the_spec_accepts_a_block_the_driver_refuses():
    # why the judges cannot rely on resolve_sizes: 128 threads pass its check, z = 128 does not launch
    spec = launch.LaunchSpec.from_dict({"task": "ew-relu", "kernels": [
        {"name": "a", "grid": [1], "block": [256], "args": ["x", "out"]},
        {"name": "b", "grid": [1], "block": [1, 1, 128], "args": ["rows"]}]})
    assert spec.resolve_sizes({"rows": 8, "cols": 8})[1].block == (1, 1, 128)


def test_the_task_judge_settles_before_a_nonzero_return_is_a_verdict():
    from cudal2.harness import task_judge
    src = inspect.getsource(task_judge._judge)
    body = src[src.index("def call("):src.index("def settle(")]
    assert re.search(r"if rc:.*?settle\(stage\).*?raise TaskFailed", body, re.S), body


def test_the_gemm_judge_waits_before_a_nonzero_return_is_a_verdict():
    from cudal2.harness.judge import Judge
    body = inspect.getsource(Judge.guarded_call)
    assert re.search(r"if rc != 0:.*?self\.wait\(stage.*?self\.drain_device\(stage.*?raise Failed", body, re.S), body


def _shift_by_first_softmax(x, log=False):
    """tests/kernels/tasks/zz38_softmax_first_element_shift.cu, emulated: exp(x - x[row, 0])."""
    import torch
    xf = x.float()
    e = torch.exp(xf - xf[..., :1])
    return (xf - xf[..., :1] - torch.log(e.sum(-1, keepdim=True))).half() if log else (e / e.sum(-1, keepdim=True)).half()


@pytest.mark.parametrize("task_id,sizes", [("row-softmax", {"rows": 256, "cols": 4096}),
                                           ("row-softmax", {"rows": 256, "cols": 2051}),
                                           ("row-online-softmax", {"rows": 16, "cols": 1 << 14}),
                                           ("row-log-softmax", {"rows": 256, "cols": 4096})])
def test_a_softmax_shifted_by_a_rows_first_element_fails_on_the_tasks_inputs(task_id, sizes):
    import torch

    from cudal2.harness.task_judge import within
    from cudal2.rl import general
    t = general.BY_ID[task_id]
    for seed in range(3):
        x = general.inputs(t, sizes, torch.Generator().manual_seed(seed))
        (ref,) = t.reference(**x)
        assert not within(_shift_by_first_softmax(x["x"], "log" in task_id), ref, t.tolerance.kind)[0], seed
        # ... while subtracting the max still passes on the same rows
        xf = x["x"].float()
        m = xf.amax(-1, keepdim=True)
        e = torch.exp(xf - m)
        honest = (xf - m - torch.log(e.sum(-1, keepdim=True))).half() if "log" in task_id else \
            (e / e.sum(-1, keepdim=True)).half()
        assert within(honest, ref, t.tolerance.kind)[0], seed


def test_the_second_size_set_is_drawn_afresh():
    # tests/kernels/tasks/zz38_relu_two_known_sizes.cu special-cased the one fixed second set
    from cudal2.rl import general
    t = general.BY_ID["ew-relu"]
    assert len({tuple(sorted(general.tail_sizes(t).items())) for _ in range(20)}) > 1
