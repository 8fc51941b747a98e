"""Completions to sources: fenced files, several blocks, missing blocks, diffs that apply and don't."""

import pytest

from cudal2.llm.parse import ParseError, apply_edits, candidate_source, full_file

FILE = ('/* cudal2-launch\n{"kernels": [{"name": "k", "grid": [1], "block": [32], "args": ["A", "B", "C"]}]}\n*/\n'
        'extern "C" __global__ void k(const __half* A, const __half* B, __half* C) {}\n')


def test_single_cuda_block_is_the_file():
    assert full_file(f"Here it is:\n```cuda\n{FILE}```\nDone.") == FILE


def test_single_untagged_block_is_accepted():
    assert full_file(f"```\n{FILE}```") == FILE


def test_prose_outside_the_block_is_ignored():
    assert full_file(f"```python\nprint(1)\n```\n```cuda\n{FILE}```") == FILE


def test_several_cuda_blocks_are_an_error():
    with pytest.raises(ParseError, match="2 fenced"):
        full_file(f"```cuda\n{FILE}```\n```cuda\n{FILE}```")


def test_missing_block_is_an_error():
    with pytest.raises(ParseError, match="no fenced"):
        full_file("I would tile it 128x128.")


def test_fragment_without_launch_spec_is_an_error():
    with pytest.raises(ParseError, match="no /\\* cudal2-launch"):
        full_file("```cuda\n__global__ void k() {}\n```")


def test_v1_host_file_is_an_error_that_names_the_launch_spec():
    v1 = 'extern "C" int cudal2_gemm(const __half* A) { k<<<1, 32, 0, stream>>>(A); return 0; }\n'
    with pytest.raises(ParseError, match="cudal2-launch.*JSON launch spec.*no host code"):
        full_file(f"```cuda\n{v1}```")


def test_launch_spec_in_a_separate_json_block_is_not_the_file():
    kernel = 'extern "C" __global__ void k(__half* C) {}\n'
    spec = '/* cudal2-launch {"kernels": []} */\n'
    with pytest.raises(ParseError, match="cudal2-launch"):
        full_file(f"```cuda\n{kernel}```\n```json\n{spec}```")


def test_full_mode_does_not_validate_the_spec():
    # A malformed spec is the harness's to report (policy stage, with the spec's own error message).
    bad = '/* cudal2-launch {"kernels": 3} */\nextern "C" __global__ void k() {}\n'
    assert candidate_source(f"```cuda\n{bad}```", "full", None) == bad


PARENT = "int a = 1;\nint b = 2;\nint c = 3;\n"


def test_edits_apply_in_order():
    done = apply_edits(PARENT, "<<<<<<< SEARCH\nint a = 1;\n=======\nint a = 10;\n>>>>>>> REPLACE\n"
                               "<<<<<<< SEARCH\nint c = 3;\n=======\nint c = 30;\n>>>>>>> REPLACE\n")
    assert done == "int a = 10;\nint b = 2;\nint c = 30;\n"


def test_unmatched_search_is_a_hard_failure():
    with pytest.raises(ParseError, match="block 2 .*does not occur"):
        apply_edits(PARENT, "<<<<<<< SEARCH\nint a = 1;\n=======\nint a = 10;\n>>>>>>> REPLACE\n"
                            "<<<<<<< SEARCH\nint z = 9;\n=======\nint z = 0;\n>>>>>>> REPLACE\n")


def test_ambiguous_search_is_a_hard_failure():
    with pytest.raises(ParseError, match="occurs 2 times"):
        apply_edits("x;\nx;\n", "<<<<<<< SEARCH\nx;\n=======\ny;\n>>>>>>> REPLACE")


def test_diff_mode_needs_blocks():
    with pytest.raises(ParseError, match="no SEARCH/REPLACE"):
        candidate_source("```cuda\nint x;\n```", "diff", PARENT)
