"""The v2 launch spec: parsing, the expression language, and resolution for a shape."""

import json

import pytest

from cudal2.harness.launch import SpecError, check_expr, evaluate, parse

GOOD = """
/* cudal2-launch
{"workspace": "2 * M * N * 4", "m_tiles": [64],
 "kernels": [{"name": "part", "grid": ["cdiv(M, 64) * cdiv(N, 64)", 2], "block": [256], "smem": 65536,
              "args": ["A", "B", {"ws": 0}, "M", "N", "K"]},
             {"name": "red", "grid": ["cdiv(M * N, 2048)"], "block": [256], "args": [{"ws": 0}, "C", {"int": "M * N"}]}]}
*/
"""


def spec_with(kernel: str, extra: str = "") -> str:
    return '/* cudal2-launch {"kernels": [' + kernel + ']' + extra + '} */'


def test_a_file_without_a_spec_is_v1():
    assert parse("extern \"C\" int cudal2_gemm();") is None


def test_spec_resolves_for_a_shape():
    (part, red) = parse(GOOD).resolve(257, 136, 1032)
    assert part.grid == (5 * 3, 2, 1) and part.block == (256, 1, 1) and part.smem == 65536
    assert red.args[2] == ("int", 257 * 136)


def test_workspace_is_an_expression_of_the_shape():
    assert parse(GOOD).workspace_bytes(10, 20, 8) == 2 * 10 * 20 * 4


@pytest.mark.parametrize("expr", ["__import__('os')", "M / 2", "M ** 2", "open", "(lambda: 1)()", "M if N else K",
                                  "x", "M.bit_length()", "[M][0]"])
def test_only_integer_arithmetic_of_m_n_k_is_allowed(expr):
    with pytest.raises(SpecError):
        check_expr(expr)


def test_expressions_compute_what_they_say():
    assert evaluate("cdiv(M, 128) * max(N // 2, 3) - K % 5 + min(4, 9, 2)", {"M": 129, "N": 10, "K": 12}) == 2 * 5 - 2 + 2


def test_grid_must_be_a_multiple_of_the_cluster():
    s = parse(spec_with('{"name": "k", "grid": ["cdiv(M, 64)"], "block": [128], "cluster": [2], "args": ["A"]}'))
    s.resolve(128, 64, 64)
    with pytest.raises(SpecError, match="multiple of cluster"):
        s.resolve(192, 64, 64)


def test_block_over_1024_threads_is_refused():
    with pytest.raises(SpecError, match="1024"):
        parse(spec_with('{"name": "k", "grid": [1], "block": [32, 33], "args": []}')).resolve(1, 1, 8)


@pytest.mark.parametrize("smem", ["-1", "232449", "4294968320"])   # the last: 2^32 + 1024, which ctypes truncated
def test_smem_outside_what_a_block_can_have_is_refused(smem):
    with pytest.raises(SpecError, match="smem"):
        parse(spec_with('{"name": "k", "grid": [1], "block": [32], "smem": %s, "args": []}' % smem)).resolve(1, 1, 8)


def test_the_most_smem_a_block_can_have_is_accepted():
    parse(spec_with('{"name": "k", "grid": [1], "block": [32], "smem": 232448, "args": []}')).resolve(1, 1, 8)


def test_workspace_slice_outside_the_workspace_is_refused():
    s = parse(spec_with('{"name": "k", "grid": [1], "block": [32], "args": [{"ws": "M * 4"}]}', ', "workspace": "M * 4"'))
    with pytest.raises(SpecError, match="workspace"):
        s.resolve(16, 8, 8)


def test_unknown_argument_is_refused():
    with pytest.raises(SpecError, match="unknown argument"):
        parse(spec_with('{"name": "k", "grid": [1], "block": [32], "args": ["stream"]}'))


def test_tensor_map_box_must_fit_its_swizzle():
    with pytest.raises(SpecError, match="swizzle span"):
        parse(spec_with('{"name": "k", "grid": [1], "block": [32], "args": [{"tmap": "A", "box": [128, 64], "swizzle": 128}]}'))


def test_two_spec_blocks_are_refused():
    with pytest.raises(SpecError, match="exactly one"):
        parse(GOOD + GOOD)


def test_spec_round_trips_through_a_dict():
    s = parse(GOOD)
    assert type(s).from_dict(s.to_dict()) == s


def _task_spec(args, task="row-softmax", extra=""):
    return ('/* cudal2-launch {"task": "%s", %s"kernels": [{"name": "k", "grid": ["rows"], "block": [256], '
            '"args": %s}]} */' % (task, extra, json.dumps(args)))


def test_a_task_spec_speaks_its_tasks_buffers_and_sizes():
    spec = parse(_task_spec(["x", "out", "cols", {"int": "rows * cols"}]))
    (r,) = spec.resolve_sizes({"rows": 8, "cols": 1024})
    assert spec.task == "row-softmax" and r.grid == (8, 1, 1)
    assert r.args == [("x", None), ("out", None), ("cols", None), ("int", 8192)]


@pytest.mark.parametrize("args,why", [(["A", "out"], "unknown argument 'A'"),
                                      ([{"tmap": "x", "box": [64, 64], "swizzle": 0}], "tensor maps are for the GEMM"),
                                      ([{"int": "M * 2"}], "only integers, the sizes")])
def test_a_task_spec_refuses_the_gemms_vocabulary(args, why):
    with pytest.raises(SpecError, match=why):
        parse(_task_spec(args))


def test_a_spec_for_a_task_that_does_not_exist_is_refused():
    with pytest.raises(SpecError, match="no task 'row-nothing'"):
        parse(_task_spec(["x"], task="row-nothing"))
