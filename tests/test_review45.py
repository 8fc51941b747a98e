"""Review 45: what a candidate reached past the rules (see each section)."""

import shutil

import pytest

from cudal2.harness import policy

from .conftest import KERNELS

BAD = KERNELS / "bad"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
NAIVE = (KERNELS / "good" / "naive_v2.cu").read_text()


# --- directives that name a file, and GCC's blanks ----------------------------------------------
# `#line 3 "/etc/passwd"` and a `#warning`: GCC quoted /etc/passwd's third line in the build log.
# A BOM at the file's start, or a NUL, before `#include`: GCC skips both, the scanner did not.

SPELLINGS = {
    "line": '#line 3 "/etc/passwd"\n#warning x\n',
    "line_macro": '#define F "/etc/passwd"\n#line 1 F\n',
    "linemarker": '# 3 "/etc/passwd"\n',
    "linemarker_digraph": '%: 3 "/etc/passwd" 1\n',
    "bom": '\ufeff#include "/etc/hostname"\n',
    "nul_before": '\0#include "/etc/hostname"\n',
    "nul_between": '#\0include "/etc/hostname"\n',
    "nul_after_blanks": ' \0 \t#include </etc/hostname>\n',
}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_a_directive_that_names_a_file_is_a_header_violation(name):
    assert [v.rule for v in policy.check_device_only(SPELLINGS[name] + NAIVE)] == ["header"]
    assert "header" in {v.rule for v in policy.check(SPELLINGS[name] + NAIVE)}


@pytest.mark.parametrize("src", ["#pragma once\n", "#if 1\n#endif\n", "#define L 3\n", "\ufeff#include <cuda_fp16.h>\n",
                                 "int x = 1; // # 3 \"f\" (not at a line start)\n"])
def test_other_directives_and_a_bom_before_an_allowed_header_pass(src):
    assert policy.check_device_only(src + NAIVE) == []


@needs_nvcc
@pytest.mark.parametrize("name", ["zz45_line_names_host_file.cu", "zz45_include_after_bom.cu",
                                  "zz45_include_after_nul.cu"])
def test_the_file_naming_kernels_stop_at_policy(cfg, name):
    from cudal2.harness.build import build
    r = build((BAD / name).read_text(), cfg.build)
    assert not r.ok and r.stage == "policy" and "header" in r.reason, r.reason
