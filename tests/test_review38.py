"""Review 38 (CPU): a nonzero launch return after earlier launches of the same call were enqueued
(cuLaunchKernelEx's invalid value for a block z over 64, tests/kernels/*/zz38_*_then_invalid_launch.cu)
must not reach the verdict and the module's unload before those launches end: both judges
synchronize first, so a hang or a CUDA error there is a fault and the worker is replaced."""

import inspect
import re

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
