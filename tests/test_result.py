from cudal2.result import EvalResult, Fault, Stage, Timing


def test_result_round_trips_through_json():
    r = EvalResult("k", "abc", 64, 64, 64)
    r.times = {"offline": {"candidate": Timing(1.5, 2.0, 10)}}
    r.fail(Stage.TIMING, "multi\nline   reason", Fault.HANG)
    back = EvalResult.from_dict(__import__("json").loads(r.to_json()))
    assert back == r


def test_fail_keeps_the_reason_to_one_line():
    r = EvalResult("k", "abc", 64, 64, 64).fail(Stage.EXACT, "a\nb")
    assert "\n" not in r.reason and not r.ok
