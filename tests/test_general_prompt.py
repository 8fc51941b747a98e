"""Stage general's prompts name the task's contract, buffers, sizes and reference, one per task."""

from cudal2.rl.general import SUITE
from cudal2.rl.tasks import general_prompt, general_tasks


def test_every_task_of_the_suite_is_a_training_task_with_a_fixed_split():
    a, b = general_tasks(), general_tasks()
    assert [t.general for t in a] == [t.id for t in SUITE]
    assert [t.split for t in a] == [t.split for t in b] and any(t.split == "heldout" for t in a)


def test_a_prompt_carries_the_launch_block_buffers_and_reference():
    t = next(t for t in general_tasks() if t.general == "norm-rmsnorm")
    text = general_prompt(t)[0]["content"]
    assert '"task": "norm-rmsnorm"' in text and "`x`: f16 [rows, cols]" in text and "`w`: f16 [cols]" in text
    assert "rsqrt" in text and "rows = 8192, cols = 4096" in text


def test_exact_tasks_ask_for_bitwise_equality():
    t = next(t for t in general_tasks() if t.general == "row-argmax")
    assert "bitwise equality" in general_prompt(t)[0]["content"]
