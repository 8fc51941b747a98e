"""Review 48: what a v2 kernel file still made the compiler read, and the scan's own failures."""

import shutil
import subprocess
import time

import pytest

from cudal2.harness import policy

from .conftest import BAD, NAIVE, needs_nvcc


# --- a `#` that gcc passes on as text is a directive to cicc -------------------------------------
# nvcc runs `gcc -E` and hands its output to cicc, whose EDG front end preprocesses it again. Each
# of these put `# include "FILE"` first on a line of gcc's output, and cicc read FILE (checked with
# nvcc 13 below); the policy passed every one.

STRAY = {
    "object_macro": '#define H # include "FILE"\nH\n',
    "object_macro_digraph": '#define H %:include "FILE"\nH\n',
    "macro_argument": '#define ID(x) x\nID(#) include "FILE"\n',
    "after_empty_macro": '#define E\nE # include "FILE"\n',
    "after_a_comment_across_lines": 'int zz48; /* a\n*/ # include "FILE"\n',
    "after_multiline_args": '#define ID(x) x\nint zz48 = ID(1\n) # include "FILE"\n',
}


@pytest.mark.parametrize("name", sorted(STRAY))
def test_a_hash_outside_a_directive_start_is_refused(name):
    found = policy.check_device_only(STRAY[name].replace("FILE", "/etc/hostname") + NAIVE)
    assert found and {v.rule for v in found} == {"header"}, found


@needs_nvcc
@pytest.mark.parametrize("name", sorted(STRAY))
def test_cicc_really_reads_the_file(tmp_path, name):
    """The premise: each spelling makes nvcc read FILE (its one token comes back in the log)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("zz48_secret_token\n")
    src = tmp_path / "k.cu"
    src.write_text(STRAY[name].replace("FILE", str(secret)) + 'extern "C" __global__ void k(int* p) { p[0] = 1; }\n')
    r = subprocess.run(["nvcc", "-ptx", "-arch=compute_90a", str(src), "-o", str(tmp_path / "k.ptx")],
                       capture_output=True, text=True, timeout=300)
    assert "zz48_secret_token" in r.stdout + r.stderr


@pytest.mark.parametrize("src", [
    '#define S(x) #x\n#define T(x) S(x)\n', '#define S(x) # x\n', '#define S(x) %:x\n', '#define S(x) /* a\n */ #x\n',
    "int zz48 = 0; // # of tiles\n", "/* tiles: # of rows */\n", 'const char zz48 = \'#\';\n',
    'static_assert(true, "# #include <x>");\n', "const int zz48 = 1'000'000;\n",
    "const double zz48 = 0x1.8p+1'0;\n", "/*\n*/ #include <cuda_fp16.h>\n", "\ufeff#include <cuda_fp16.h>\n",
    "// \u00d7 \u2014 \u2264\nconst char* zz48 = \"\u00e9\";\n", '#if 0\n#error "#"\n#endif\n', "#\n",
])
def test_honest_spellings_pass(src):
    assert policy.check_device_only(src + NAIVE) == []


@pytest.mark.parametrize("src", [
    'const char* zz48 = R"(a)";\n', 'const char* zz48 = u8R"x(a)x";\n', "int zz48\u00e9 = 0;\n", "int zz48 = 1\u00b2;\n",
    "int zz48 = 0; \ufeff\n",
])
def test_what_would_make_the_reading_differ_from_gccs_is_refused(src):
    """A raw string (gcc undoes splices inside one) or a character outside ASCII in code (which gcc
    takes into a name or a number moves where literals start) could hide a `#` from the lexer."""
    found = policy.check_device_only(src + NAIVE)
    assert found and {v.rule for v in found} == {"header"}, found


def test_a_digit_separator_does_not_hide_a_hash():
    # gcc: `1'0` is one number, then `"` opens a string; a lexer taking `'0; ... '` for a character
    # literal would see the `#` below as inside one
    src = "#define E\nconst int q = 1'0; const char* s = \"'\"; E # include \"/etc/hostname\"\n"
    assert any("outside a directive" in v.excerpt for v in policy.check_device_only(src + NAIVE))


def test_header_names_hold_only_path_characters():
    for h in ("cute/*", "cute//tensor.hpp", "cute/a b.hpp", "cute/a'b.hpp", 'cute/a"b'):
        assert not policy.header_allowed(h), h
    assert policy.header_allowed("cute/tensor.hpp") and policy.header_allowed("cuda/std/type_traits")


@needs_nvcc
def test_the_kernel_stops_at_policy(cfg):
    from cudal2.harness.build import build
    r = build((BAD / "zz48_hash_from_macro_include.cu").read_text(), cfg.build)
    assert not r.ok and r.stage == "policy" and "outside a directive" in r.reason, r.reason


def test_the_lexer_stays_linear():
    src = ("#define S(x) #x\nint a = 1'0'0; const char* s = \"#'\"; /* # */ // #\n" * 30_000) + NAIVE
    t0 = time.monotonic()
    assert policy.check_device_only(src) == []
    assert time.monotonic() - t0 < 10


# --- the include scan's comment cache -----------------------------------------------------------

STALE = '#if __has_include/**/("/etc/hostname")\n#endif\n#if 0\n/* */("cuda_fp16.h")\n#endif\n'


def test_a_comment_before_a_has_include_operand_is_skipped_to_its_own_end():
    """The `*/` cached by the directive pass (near the file's end) made the has-include pass read
    the operand after it, an allowed header, for the one gcc evaluated."""
    found = policy.check_device_only(NAIVE + STALE)
    assert [v.rule for v in found] == ["header"] and "/etc/hostname" in found[0].excerpt, found


@needs_nvcc
def test_the_oracle_kernel_stops_at_policy(cfg):
    from cudal2.harness.build import build
    r = build((BAD / "zz48_has_include_stale_comment.cu").read_text(), cfg.build)
    assert not r.ok and r.stage == "policy" and "/etc/hostname" in r.reason, r.reason


def test_comments_before_operands_still_scan_in_linear_time():
    src = "".join(f'#if __has_include/**/(<cuda_fp16.h>)\n#endif\n/* x */ int zz48_{i};\n' for i in range(40_000))
    t0 = time.monotonic()
    assert policy.check_device_only(src + NAIVE) == []
    assert time.monotonic() - t0 < 10
