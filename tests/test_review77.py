"""Review 77: the build rules' own cost, and what they say to honest code (CPU: the build runs here)."""

import time

import pytest

from .conftest import BAD
from .test_review39 import _ptx


@pytest.mark.timeout(300)
def test_many_declared_names_and_policy_reads_build_in_seconds(cfg):
    # bad/zz77: 65,536 names declared after the policy register and 32,768 reads of it cost ~30 s
    # of the rules' Python when each read scanned every declaration
    from cudal2.harness.build import build
    t0 = time.monotonic()
    r = build((BAD / "zz77_policy_scope_lookup_stall.cu").read_text(), cfg.build)
    assert r.ok, r.reason
    assert time.monotonic() - t0 < 20


@pytest.mark.timeout(60)
def test_range_declarations_count_against_the_rules_budget():
    # ranges (%x<N>) are compared one by one: 20,000 of them and 2,000 reads would be 4e7 steps,
    # past PATH_STEPS, so the function is refused (fail closed), and soon
    from cudal2.harness.cubin import statement_violations
    decl = ".reg .b64 pol, x;\n.reg .b32 t;\n" + "".join(f".reg .b32 v{i}_<1>;\n" for i in range(20000)) + "mov.b64 x, 0;"
    body = "createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n" + "ld.global.L2::cache_hint.b32 t, [x], pol;\n" * 2000
    t0 = time.monotonic()
    v = statement_violations(_ptx(decl, body))
    assert any("than the rule can check" in x for x in v) and time.monotonic() - t0 < 30


def test_a_policy_register_in_an_inner_scope_still_resolves_to_its_own_declaration():
    # the lookup by name keeps scopes apart: an inner `pol` written, an outer one read unwritten
    from cudal2.harness.cubin import statement_violations
    decl = ".reg .b64 pol, x;\n.reg .b32 t;\nmov.b64 x, 0;"
    inner = "{\n.reg .b64 pol;\ncreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n}\n"
    read = "ld.global.L2::cache_hint.b32 t, [x], pol;\n"
    assert any("reaches unwritten" in x for x in statement_violations(_ptx(decl, inner + read)))
    outer = "createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
    assert statement_violations(_ptx(decl, outer + "{\n" + read + "}\n")) == []


def test_assert_in_device_code_is_named_as_the_cause():
    # review 77: the refusal blamed writable module globals, which an author (or a model) reading it
    # would not connect with assert()
    from cudal2.harness.cubin import CubinInfo, violations
    info = CubinInfo.__new__(CubinInfo)
    info.sections, info.undefined, info.entries = [".nv.global.init", ".text.k"], ["__assertfail"], ["k"]
    assert violations(info, ["k"])[0].startswith("assert() in device code")
