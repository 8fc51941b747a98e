"""Review 45: what a candidate reached past the rules (see each section)."""

import pytest

from cudal2.harness import policy

from .conftest import BAD, NAIVE, needs_nvcc



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


# --- a library entry is verified where it is served ---------------------------------------------
# `library verify`/`bench` and `cudal2 sass` drew the verification shapes from the entry's source's
# claim: an M-range entry whose source claimed only its top shape (or nothing) was verified at that
# M alone and served at every M of its range.

@needs_nvcc
def test_an_m_range_entry_is_verified_across_its_range_whatever_its_source_claims(cfg):
    from cudal2.harness.build import build
    from cudal2.harness.evaluate import Evaluator
    from cudal2.library.manifest import Entry
    from cudal2.problem import Problem
    b = build(NAIVE, cfg.build)
    assert b.ok, b.reason
    e = Entry(id="r", M=None, N=256, K=64, family="", params={}, provenance={}, source="r.cu", source_sha256="",
              device_sha256=b.device_sha256, build={}, measured={}, gpu={}, date="", m_range=[1, 4096],
              binary="r.cubin", spec=b.spec)
    seen = []
    ev = Evaluator(cfg, worker=object())
    ev.judge_request = lambda r, worker, req: seen.append(req)
    for source in (NAIVE, "// cudal2-shapes: 4096x256x64\n" + NAIVE):
        ev.judge_cubin(b.lib_path, e.id, e.spec, source, Problem(4096, 256, 64), claim=e.claim())
    for req in seen:
        ms = {m for m, _, _ in req.verify_shapes + req.light_shapes}
        assert {1, 4096} <= ms and len(ms) > 100 and all(1 <= m <= 4096 for m in ms)


def test_an_exact_entry_claims_its_one_shape():
    from cudal2.library.manifest import Entry
    from cudal2.problem import Problem
    e = Entry(id="x", M=64, N=256, K=64, family="", params={}, provenance={}, source="x.cu", source_sha256="",
              device_sha256="", build={}, measured={}, gpu={}, date="")
    c = e.claim()
    assert c.covers(Problem(64, 256, 64)) and not c.covers(Problem(65, 256, 64)) and not c.universal


def test_the_library_and_sass_judges_pass_the_entrys_claim():
    import inspect

    from cudal2.library import bench
    from cudal2.sass import run
    assert "claim=e.claim()" in inspect.getsource(bench._judge_all)
    assert "claim=e.claim()" in inspect.getsource(run._judge)
