"""CPU tests of the ncu raw-CSV parser and the ncu command line (no GPU, no ncu)."""

import os

import pytest

from cudal2.harness.profile import METRIC_SETS, ncu_command, parse_ncu_csv

# Two launches of one call, in ncu's `--csv --page raw` layout: header, units row, one row per
# kernel; ncu's own lines around it; kernel names with commas; a thousands separator; one
# "n/a" value (sm throughput of the second kernel); columns nobody asked for, as ncu adds them.
RAW = '''==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "mm_f32" - 0: 0%....50%....100% - 9 passes
==PROF== Profiling "to_half" - 1: 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed","lts__throughput.avg.pct_of_peak_sustained_elapsed","launch__registers_per_thread","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","device__attribute_clock_rate","sm__throughput.max.pct_of_peak_sustained_elapsed"
"","","","","","","","","","","","ns","%","%","register/thread","","","","%"
"0","4242","python3.12","127.0.0.1","mm_f32(const __half *, const __half *, float *, int, int, int)","1","13","(32, 4, 1)","(32, 8, 1)","0","9.0","3,000","80.00","60.00","128","2.5","1.0","1980000","90.00"
"1","4242","python3.12","127.0.0.1","to_half(const float *, __half *, unsigned long)","1","13","(256, 1, 1)","(1024, 1, 1)","0","9.0","1,000","n/a","20.00","32","0.5","3.0","1980000","n/a"
==PROF== Disconnected from process 4242
'''


@pytest.fixture
def summary():
    return parse_ncu_csv(RAW)["summary"]


def test_one_kernel_entry_per_launch():
    kernels = parse_ncu_csv(RAW)["kernels"]
    assert [k["name"].split("(")[0] for k in kernels] == ["mm_f32", "to_half"]


def test_columns_not_asked_for_are_dropped():
    kernel = parse_ncu_csv(RAW)["kernels"][0]
    assert not {"device__attribute_clock_rate",
                "sm__throughput.max.pct_of_peak_sustained_elapsed"} & set(kernel)


def test_duration_is_summed_over_kernels(summary):
    assert summary["duration_ns"] == pytest.approx(4000.0)


def test_percentage_is_duration_weighted_mean(summary):
    assert summary["l2_pct"] == pytest.approx((60 * 3000 + 20 * 1000) / 4000)


def test_na_value_is_left_out_of_the_mean(summary):
    assert summary["sm_pct"] == pytest.approx(80.0)


def test_na_value_is_absent_from_its_kernel():
    assert "sm_pct" not in parse_ncu_csv(RAW)["kernels"][1]


def test_stalls_are_a_sub_dict_of_weighted_means(summary):
    assert summary["stalls"] == pytest.approx({"long_scoreboard": 2.0, "barrier": 1.5})


def test_stalls_are_sorted_largest_first(summary):
    assert list(summary["stalls"]) == ["long_scoreboard", "barrier"]


def test_launch_attribute_comes_from_the_longest_kernel(summary):
    assert summary["registers_per_thread"] == 128.0


def test_microseconds_are_converted_to_nanoseconds():
    text = RAW.replace('"ns"', '"usecond"').replace('"3,000"', '"3"').replace('"1,000"', '"1"')
    assert parse_ncu_csv(text)["summary"]["duration_ns"] == pytest.approx(4000.0)


def test_output_without_a_table_gives_no_kernels():
    text = "==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n"
    assert parse_ncu_csv(text)["kernels"] == []


def test_ncu_command_leaves_clocks_alone():
    argv = ncu_command("lib.so", 128, 256, 512)
    assert argv[argv.index("--clock-control") + 1] == "none"


def test_ncu_command_profiles_only_the_started_range():
    argv = ncu_command("lib.so", 128, 256, 512)
    assert argv[argv.index("--profile-from-start") + 1] == "off"


def test_ncu_command_runs_the_target_module_on_the_library_and_shape():
    argv = ncu_command("lib.so", 128, 256, 512)
    i = argv.index("cudal2.harness.profile_target")
    assert argv[i - 1:] == ["-m", "cudal2.harness.profile_target", os.path.abspath("lib.so"),
                            "128", "256", "512"]


def test_ncu_command_asks_for_the_set_metrics():
    argv = ncu_command("lib.so", 128, 256, 512, metric_set="quick")
    assert argv[argv.index("--metrics") + 1].split(",") == METRIC_SETS["quick"]


def test_unknown_metric_set_is_refused():
    with pytest.raises(ValueError):
        ncu_command("lib.so", 128, 256, 512, metric_set="no-such-set")


def test_default_set_covers_the_required_quantities():
    names = " ".join(METRIC_SETS["default"])
    for part in ("gpu__time_duration", "dram_throughput", "lts__throughput", "sm__throughput",
                 "pipe_tensor", "sm__warps_active", "launch__registers_per_thread",
                 "issue_stalled"):
        assert part in names, part
