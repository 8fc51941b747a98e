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


# --- the compiler's output is bounded -----------------------------------------------------------
# 8192 `#pragma message` remarks of 64 KiB: 1.6 GB read into the judge's memory (4.6 GB peak) and
# written to the cache's build.log, of a kernel that built and passed.

def test_a_compiler_printing_past_the_limit_is_killed_and_fails(tmp_path):
    import time

    from cudal2.harness.build import MAX_LOG_MB, _run_killable
    t0 = time.monotonic()
    rc, out = _run_killable(["sh", "-c", "yes 0123456789abcdef; echo never"], str(tmp_path), 60)
    assert rc not in (0, None) and out.startswith("error: the compiler wrote more than")
    assert len(out) <= (MAX_LOG_MB << 20) + 200 and "never" not in out
    assert time.monotonic() - t0 < 30


def test_output_under_the_limit_is_kept_whole(tmp_path):
    from cudal2.harness.build import _run_killable
    rc, out = _run_killable(["sh", "-c", "seq 1 100000; exit 3"], str(tmp_path), 60)
    assert rc == 3 and out.splitlines() == [str(i) for i in range(1, 100001)]


@needs_nvcc
@pytest.mark.timeout(600)
def test_the_output_flood_fails_at_build_and_caches_nothing_of_the_compilers(cfg):
    from pathlib import Path

    from cudal2.harness.build import build
    r = build((BAD / "zz45_compiler_output_flood.cu").read_text(), cfg.build)
    assert not r.ok and r.stage == "build" and "more than" in r.reason, r.reason
    assert r.seconds < 120
    folder = Path(cfg.build.cache_dir) / r.key
    assert sorted(f.name for f in folder.iterdir()) == ["build.json", "build.log", "kernel.cu"]
