"""Review 47: what review 45 left open (names the preprocessor acts on that no scan of the text saw,
nvdisasm's unbounded listing) and what review 48 found and left (findings on one long line)."""

import time

import pytest

from cudal2.harness import policy

from .conftest import BAD, NAIVE, needs_nvcc


# Each probed a file the judge never allowed (checked with nvcc 13 on this machine: a pasted
# `__has_include` evaluates, `GCC dependency` fails the build on a missing file, blocks on a FIFO).
REFUSED = {
    "pasted_has_include": '#define CAT(a, b) a##b\n#if CAT(__has_, include)("/etc/passwd")\n#endif\n',
    "digraph_paste": "#define CAT(a, b) a %:%: b\n",
    "paste_in_a_comment": "// a ## b\n",
    "ucn_in_has_include": '#if __has_includ\\u0065("/etc/passwd")\n#endif\n',
    "ucn_long": "int dependenc\\U00000079;\n",
    "pragma_dependency": '#pragma GCC dependency "/etc/passwd"\n',
    "pragma_pch": '#pragma GCC pch_preprocess "/tmp/x.gch"\n',
    "pragma_by_macro": '#define D GCC dependency "/etc/passwd"\n#pragma D\n',
    "pragma_digraph": '%:pragma GCC dependency "/etc/passwd"\n',
    "pragma_operator_literal": '_Pragma("GCC dependency \\"/etc/passwd\\"")\n',
    "pragma_operator_stringized": '#define S(x) #x\n_Pragma(S(GCC dependency "/etc/passwd"))\n',
    "has_embed": '#if __has_embed("/etc/passwd")\n#endif\n',
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_name_built_or_a_pragma_that_reads_a_file_is_refused(name):
    assert [v.rule for v in policy.check_device_only(REFUSED[name] + NAIVE)] == ["header"]


@pytest.mark.parametrize("src", ["#pragma unroll\n", "#pragma unroll 4\n", "#pragma unroll(2)\n", "#pragma nounroll\n",
                                 "#pragma once\n", "#pragma nv_diag_suppress 177\n", "#pragma diag_default 177\n",
                                 "#pragma GCC diagnostic push\n", '#pragma message("tile 128")\n',
                                 '#define U _Pragma("unroll")\n', 'int x = 0; // # of tiles\n'])
def test_loop_and_diagnostic_pragmas_pass(src):
    assert policy.check_device_only(src + NAIVE) == []


@needs_nvcc
@pytest.mark.parametrize("name", ["zz47_pasted_has_include.cu", "zz47_pragma_dependency_fifo.cu"])
def test_the_probing_kernels_stop_at_policy(cfg, name):
    from cudal2.harness.build import build
    r = build((BAD / name).read_text(), cfg.build)
    assert not r.ok and r.stage == "policy" and "header" in r.reason, r.reason


def test_the_scan_stays_linear_in_many_pragmas():
    src = ('_Pragma("unroll") _Pragma(\n#pragma unroll\n#pragma GCC\n' * 40_000) + NAIVE
    t0 = time.monotonic()
    found = policy.check_device_only(src)
    assert found and time.monotonic() - t0 < 5


# --- a tool's output is bounded --------------------------------------------------------------------
# nvdisasm prints a callee's name on every call: an 86 KB cubin listed to 214 MB, read whole into the
# judging process (bad/zz47_disasm_long_name_flood).

def test_bounded_run_kills_a_command_printing_past_the_limit():
    from cudal2 import bounded_run
    t0 = time.monotonic()
    r = bounded_run.run(["sh", "-c", "yes 0123456789abcdef; echo never"], timeout=60, max_bytes=1 << 20)
    assert r.over and r.rc not in (0, None) and len(r.out) <= 1 << 20 and b"never" not in r.out
    assert time.monotonic() - t0 < 30


def test_bounded_run_counts_stderr_too_and_keeps_it_apart():
    from cudal2 import bounded_run
    r = bounded_run.run(["sh", "-c", "echo out; echo err >&2; yes e >&2"], timeout=60, max_bytes=1 << 20)
    assert r.over and r.out == b"out\n" and r.err.startswith(b"err\n")


def test_bounded_run_reports_a_timeout_and_a_quiet_success():
    from cudal2 import bounded_run
    assert bounded_run.run(["sleep", "30"], timeout=0.5, max_bytes=1 << 20).rc is None
    r = bounded_run.run(["sh", "-c", "echo hi; exit 3"], timeout=10, max_bytes=1 << 20)
    assert (r.rc, r.out, r.over) == (3, b"hi\n", False)


def test_a_tool_printing_past_its_limit_fails(monkeypatch):
    from cudal2.sass import tools
    monkeypatch.setattr(tools, "require", lambda name: "/bin/sh")
    monkeypatch.setattr(tools, "MAX_OUTPUT_MB", 1)
    with pytest.raises(tools.ToolFailed, match="printed more than 1 MiB"):
        tools.run("nvdisasm", ["-c", "yes listing"])
    assert tools.run("nvdisasm", ["-c", "printf 'a\\r\\nb\\n'"]) == "a\nb\n"   # as text mode read it


@needs_nvcc
@pytest.mark.timeout(600)
def test_the_long_name_kernel_fails_at_build_on_the_listing_limit(cfg):
    from cudal2.harness.build import build
    r = build((BAD / "zz47_disasm_long_name_flood.cu").read_text(), cfg.build)
    assert not r.ok and r.stage == "build" and "printed more than" in r.reason, r.reason


def test_many_findings_on_one_long_line_stay_linear():
    # (review 48, found not closed) each finding stripped its whole line again: 100k `##` on one
    # 400 KB line took 1.8 s, minutes at 4 MB
    src = " " + "## " * 400_000 + " \n" + NAIVE
    t0 = time.monotonic()
    found = policy.check_device_only(src)
    assert len(found) >= 400_000 and time.monotonic() - t0 < 10
