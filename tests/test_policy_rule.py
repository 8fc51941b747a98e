"""A cache_hint access's policy word is its memory descriptor: only createpolicy (not .cvt) or
CuTe's three named words may make it (`cubin._policy_uses`)."""

import pytest

from cudal2.config import BuildConfig
from cudal2.harness.build import build
from cudal2.harness.cubin import statement_violations

from .conftest import KERNELS, needs_nvcc

HEAD = ".entry k(.param .u64 k_param_0)\n{\n.reg .b64 %rd<9>;\n.reg .b32 %r<9>;\n.reg .pred %p<3>;\n"
LOAD = "ld.global.L2::cache_hint.b32 %r1, [%rd1], %rd5;\n"


def rule(body: str) -> list[str]:
    return statement_violations(HEAD + body + "}")


@pytest.mark.parametrize("make", [
    "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;",
    "createpolicy.fractional.L2::evict_first.L2::evict_unchanged.b64 %rd5, 0.5;",
    "createpolicy.range.L2::evict_last.L2::evict_unchanged.b64 %rd5, [%rd2], 4096, 8192;",
    "createpolicy.fractional.L2::evict_last.b64 %rd4, 1.0;\nmov.b64 %rd5, %rd4;",      # a copy
    "mov.u64 %rd5, 1508705875169116160;",                                            # CuTe's EVICT_LAST
    "mov.b64 %rd5, 0x12F0000000000000;",                                             # CuTe's EVICT_FIRST
])
def test_policy_words_createpolicy_or_cute_makes_pass(make):
    assert rule(make + "\n" + LOAD) == []


@pytest.mark.parametrize("make", [
    "createpolicy.cvt.L2.b64 %rd5, %rd3;",                                           # any word through
    "mov.u64 %rd5, 0x1EF0000000000000;",                                             # an unnamed word
    "ld.global.u64 %rd5, [%rd2];",                                                   # from memory
    "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n@%p1 add.s64 %rd5, %rd5, 1;",   # then changed
    "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\nld.shared.v2.u64 {%rd4, %rd5}, [%r2];",  # a vector's 2nd name
    "mov.b64 %rd5, {%r3, %r4};",                                                     # packed from halves
    "ld.param.u64 %rd5, [k_param_0];",                                               # a launch parameter
    "mov.b64 %rd5, 010;",                                                            # octal: was a ValueError
    # review 34: a `.func` with two `.reg` returns writes the second name of `call (a, b)` too
    "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\ncall (%r3, %rd5), f, (%rd3);",
    "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\ncall.uni (%r3, %r4, %rd5), f, (%rd3);",
])
def test_any_other_policy_word_is_refused(make):
    assert rule(make + "\n" + LOAD), make


@pytest.mark.parametrize("body", [
    "@%p1 createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n" + LOAD,           # false guard: unwritten
    LOAD + "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n",                # read before the write
    "@%p1 bra $L1;\ncreatepolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n$L1:\n" + LOAD,   # jumped over
    "@%p1 bra $L2;\ncreatepolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\nbra $L3;\n$L1:\n" + LOAD
    + "ret;\n$L2:\nbra $L1;\n$L3:\nret;\n",                                           # in by a back jump
    "{\n.reg .b64 pol;\ncreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n}\n{\n.reg .b64 pol;\n"
    "ld.global.L2::cache_hint.b32 %r1, [%rd1], pol;\n}\n",                              # another scope's pol
    "@%p1 createpolicy.fractional.L2::evict_last.b64 %rd4, 1.0;\nmov.b64 %rd5, %rd4;\n" + LOAD,   # a copy of one
    "@%p1 brx.idx %r1, $T;\ncreatepolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n$L1:\n" + LOAD,  # brx: anywhere
    # review 32: a vector operand's braces once cut the access in pieces, hiding its read
    "@%p1 createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n"
    "ld.global.L2::cache_hint.v2.b32 {%r1, %r2}, [%rd1], %rd5;\n",
    "@%p1 createpolicy.fractional.L2::evict_last.b64 %rd6, 1.0;\n"
    "st.global.L2::cache_hint.v2.b32 [%rd1], {%r1, %r2}, %rd6;\n",
    # one label name in two scopes: the bra lands in its own scope, past the createpolicy
    "{\n@%p1 bra $L;\ncreatepolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n$L:\n" + LOAD + "}\n{\n$L:\n}\n",
    # an inner declaration the rule once could not read took the outer, written register's place
    "{\n.reg .b64 pol;\ncreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n{\n.reg.b64 pol;\n"
    "ld.global.L2::cache_hint.b32 %r1, [%rd1], pol;\n}\n}\n",
    "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n{\n.reg .b64 %rd< 9 >;\n" + LOAD + "}\n",
])
def test_a_policy_register_some_path_reaches_unwritten_is_refused(body):
    assert any("unwritten" in v for v in rule(body)), body


@pytest.mark.parametrize("body", [
    "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n$L1:\n" + LOAD + "@%p1 bra $L1;\n",   # a loop
    "@%p2 bra $L9;\ncreatepolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n" + LOAD + "$L9:\nret;\n",  # skip to exit
    "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n@%p1 createpolicy.fractional.L2::evict_first.b64 "
    "%rd5, 1.0;\n" + LOAD,                                                            # guarded rewrite of a written one
    "{\n.reg .b64 pol;\ncreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
    "ld.global.L2::cache_hint.b32 %r1, [%rd1], pol;\n}\n",                              # one asm block
    "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n"
    "ld.global.L2::cache_hint.v2.b32 {%r1, %r2}, [%rd1], %rd5;\n",                      # a vector access
    "{\n.reg.b64 pol;\ncreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
    "ld.global.L2::cache_hint.b32 %r1, [%rd1], pol;\n}\n",                              # an unspaced .reg
    "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n%L1 :\n" + LOAD + "@%p1 bra %L1;\n",  # a %-label loop
    "{\n$L:\n}\ncreatepolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n{\n$L:\n" + LOAD + "@%p1 bra $L;\n}\n",
])
def test_a_policy_register_written_on_every_path_passes(body):
    assert rule(body) == [], body


@pytest.mark.parametrize("hidden", [
    "%L1: ld.global.v2.u64 {%rd4, %rd5}, [%rd2];",          # a %-label once read as the opcode
    "$L1 : ld.global.v2.u64 {%rd4, %rd5}, [%rd2];",         # a space before the colon
])
def test_a_label_ptxas_accepts_does_not_hide_a_definition(hidden):
    good = "createpolicy.fractional.L2::evict_last.b64 %rd5, 1.0;\n"
    assert any("createpolicy did not make" in v for v in rule(good + hidden + "\n" + LOAD)), hidden


def test_a_statement_without_an_opcode_is_refused():
    assert any("cannot read" in v for v in rule("%rd4: : mov.b64 %rd5, 1;\n"))


@pytest.mark.parametrize("access", [
    "cp.async.bulk.prefetch.L2.global.L2::cache_hint [%rd1], 4096, %rd6;",
    "st.global.L2::cache_hint.b32 [%rd1], %r1, %rd6;",
    "cp.async.cg.shared.global.L2::cache_hint [%r2], [%rd1], 16, %rd6;",
    "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%r2], [%rd1, {%r3, %r4}], [%r5], %rd6;",
])
def test_every_cache_hint_access_is_checked(access):
    good = "createpolicy.fractional.L2::evict_last.b64 %rd6, 1.0;\n"
    assert rule(good + access + "\n") == []
    assert rule("mov.u64 %rd6, 42;\n" + access + "\n"), access


@needs_nvcc
@pytest.mark.parametrize("name", ["zz31_handmade_descriptor_cvt.cu", "zz32_plain_register_policy.cu",
                                  "zz32_policy_redefined_by_vector_load.cu", "zz33_policy_undefined_on_a_path.cu",
                                  "zz34_policy_read_inside_vector_operand.cu", "zz34_policy_label_in_two_scopes.cu",
                                  "zz34_policy_unspaced_reg_shadow.cu", "zz34_percent_label_hides_definition.cu"])
def test_hand_made_policy_words_fail_the_build(tmp_path, name):
    r = build((KERNELS / "bad" / name).read_text(), BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and r.stage == "build" and "policy" in r.reason, r.reason


@needs_nvcc
@pytest.mark.parametrize("name", ["r_l2_evict_last.cu", "zz29_evict_first_spare_flush_dirty.cu"])
def test_createpolicy_words_still_build(tmp_path, name):
    # (these fail later, at their own stages: the rule must not be what stops them)
    assert build((KERNELS / "bad" / name).read_text(), BuildConfig(cache_dir=str(tmp_path))).ok
