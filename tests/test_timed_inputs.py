"""What timed calls are fed: the verification trial that draws the same (no statistic of the inputs
tells a timed call from it, so a kernel that looks at its data to lower its precision there fails
that trial), and Gaussian operands (a power-bound kernel's speed depends on its data: on the H100 a
'signed' operand scored an sm90raw kernel 1.06 against 1.016 on Gaussian inputs)."""

from cudal2.harness import judge


def test_the_normal_trial_draws_what_timed_calls_get():
    assert judge.TRIAL_DISTS["normal"] == (judge.TIMED_DIST, judge.TIMED_DIST)


def test_the_normal_trial_runs_in_every_full_verification():
    assert judge.GAUSSIAN_DISTS[0] == "normal"


def test_timed_inputs_are_gaussian_in_both_operands():
    assert judge.TIMED_DIST == "normal"
