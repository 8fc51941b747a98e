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


@pytest.mark.parametrize("name,task,stages", [
    ("relu_oob.cu", "ew-relu", {"canary"}), ("relu_half_done.cu", "ew-relu", {"verify"}),
    ("relu_writes_input.cu", "ew-relu", {"inputs"}),
    # review 37: a literal grid for the task's one size (fails at the odd, smaller sizes: past the
    # end of the smaller buffers, or a fault), and a softmax without the max subtraction
    ("zz37_relu_fixed_size.cu", "ew-relu", {"canary", "verify"}),
    ("zz37_softmax_no_max.cu", "row-softmax", {"verify"}),
    # review 38: a shift by each row's first element, and a scalar path for one known second size
    ("zz38_softmax_first_element_shift.cu", "row-softmax", {"verify"}),
    ("zz38_relu_two_known_sizes.cu", "ew-relu", {"canary", "verify"}),
])
def test_a_bad_task_kernel_fails_at_its_stage(worker, name, task, stages):
    r = evaluate_task((KERNELS / "tasks" / name).read_text(), task, Config(), worker, time_it=False)
    assert not r["ok"] and r["stage"] in stages, r


@pytest.mark.parametrize("name", ["zz37_task_sticky_fault.cu", "zz37_task_hang.cu",
                                  # review 38: the same behind a later launch the driver refuses (returns 1)
                                  "zz38_task_fault_then_invalid_launch.cu", "zz38_task_hang_then_invalid_launch.cu"])
def test_after_a_fault_or_a_hang_the_next_candidate_is_judged_in_a_fresh_worker(worker, name):
    # review 37: the broken context (an illegal address) or the kernel still spinning (a hang) decided
    # the next candidate's verdict; now the worker is replaced after such a verdict
    r = evaluate_task((KERNELS / "tasks" / name).read_text(), "ew-relu", Config(), worker, time_it=False)
    assert not r["ok"] and r["stage"] == "verify", r
    nxt = evaluate_task((REFS / "ew-relu.cu").read_text(), "ew-relu", Config(), worker, time_it=False)
    assert nxt["ok"], nxt
