"""The general-task judge on the GPU: every reference solution passes verification, and a kernel
that writes outside its buffers, computes half the outputs or writes its input fails at its stage."""

from pathlib import Path

import pytest

from cudal2.config import Config
from cudal2.harness.task_judge import evaluate_task
from cudal2.rl import general
from cudal2.rl.general import SUITE

from .conftest import KERNELS

pytestmark = pytest.mark.gpu

REFS = Path(general.__file__).parent / "references"


@pytest.fixture(scope="module")
def worker():
    from cudal2.harness.worker import Worker
    with Worker() as w:
        yield w


@pytest.mark.parametrize("task", [t.id for t in SUITE])
def test_the_reference_solution_passes(worker, task):
    r = evaluate_task((REFS / f"{task}.cu").read_text(), task, Config(), worker, time_it=False)
    assert r["ok"], f"{task}: {r.get('stage')}: {r.get('reason')}"


@pytest.mark.parametrize("name,stage", [("relu_oob.cu", "canary"), ("relu_half_done.cu", "verify"),
                                        ("relu_writes_input.cu", "inputs")])
def test_a_bad_task_kernel_fails_at_its_stage(worker, name, stage):
    r = evaluate_task((KERNELS / "tasks" / name).read_text(), "ew-relu", Config(), worker, time_it=False)
    assert not r["ok"] and r["stage"] == stage, r
