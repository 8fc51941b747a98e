"""The machine-code layer under the cache_hint policy rule: every `desc[URx]` a global memory access
names holds the driver's descriptor (c[0x0][0x208]) or a createpolicy word on every path
(`cudal2.harness.sassdesc`). One property per test."""

import shutil
import subprocess

import pytest

from cudal2.config import BuildConfig
from cudal2.harness import sassdesc
from cudal2.harness.build import v2_commands
from cudal2.harness.cubin import canonical_ptx
from cudal2.sass import tools

from .conftest import KERNELS
from .listings import listing

ROOT = KERNELS.parent.parent
needs_nvdisasm = pytest.mark.skipif(tools.find("nvdisasm") is None, reason="nvdisasm missing (pip install "
                                    "nvidia-cuda-nvdisasm==13.2.*)")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None or tools.find("nvdisasm") is None,
                                reason="nvcc or nvdisasm missing")

ATTACKS = ["zz31_handmade_descriptor_cvt.cu", "zz32_plain_register_policy.cu", "zz32_policy_redefined_by_vector_load.cu",
           "zz33_policy_undefined_on_a_path.cu", "zz34_policy_read_inside_vector_operand.cu",
           "zz34_policy_label_in_two_scopes.cu", "zz34_policy_unspaced_reg_shadow.cu",
           "zz34_percent_label_hides_definition.cu"]


def cubin_without_ptx_rules(source: str, tmp_path) -> bytes:
    """nvcc -ptx and ptxas as the build runs them, with no PTX rule in between."""
    (tmp_path / "kernel.cu").write_text(source)
    to_ptx, to_cubin = v2_commands(BuildConfig(), "kernel.cu")
    subprocess.run(to_ptx, cwd=tmp_path, check=True, capture_output=True)
    (tmp_path / "kernel.ptx").write_text(canonical_ptx((tmp_path / "kernel.ptx").read_text()))
    subprocess.run(to_cubin, cwd=tmp_path, check=True, capture_output=True)
    return (tmp_path / "kernel.cubin").read_bytes()


def check(text: str) -> list[str]:
    return sassdesc.check({"k": listing(*(x.strip() for x in text.strip().splitlines()), infer=True)})


@needs_nvdisasm
def test_every_shipped_library_cubin_passes():
    for path in sorted((ROOT / "kernels_out" / "sm90").glob("*.cubin")):
        assert sassdesc.violations(path.read_bytes()) == [], path.name


@needs_nvcc
def test_createpolicy_words_pass(tmp_path):
    """fractional and range, immediate and register operands, every priority pair, CuTe's named
    word, a policy chosen on a branch and used in a loop: what ptxas computes is accepted."""
    assert sassdesc.violations(cubin_without_ptx_rules((KERNELS / "bad" / "r_l2_evict_last.cu").read_text(),
                                                       tmp_path)) == []
    src = ['extern "C" __global__ void k(const unsigned* a, unsigned* c, float f, int n) {',
           " unsigned long long p; unsigned s, t = 0;"]
    pols = [f"createpolicy.fractional.L2::{p}{q}.b64 %0, {x};" for p in ("evict_last", "evict_normal", "evict_first",
            "evict_unchanged") for q in ("", ".L2::evict_first") for x in ("1.0", "0.25", "%2")]
    pols += [f"createpolicy.range.L2::{p}.L2::evict_first.b64 %0, [%1], %3, %4;" for p in ("evict_last", "evict_first")]
    pols += ["mov.b64 %0, 0x14F0000000000000;"]
    for i, make in enumerate(pols):
        src.append(f' asm volatile("{make}" : "=l"(p) : "l"(a), "f"(f), "r"(n), "r"(2 * n));')
        src.append(f' asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(s) : "l"(a + {i}), "l"(p)); t += s;')
    src.append(' if (n > 3) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));')
    src.append(' else asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 0.5;" : "=l"(p));')
    src.append(' for (int i = 0; i < n; ++i) { asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(s) '
               ': "l"(a + i * 32), "l"(p)); t += s; }')
    src.append(" c[threadIdx.x] = t; }")
    data = cubin_without_ptx_rules("\n".join(src), tmp_path)
    assert sassdesc.violations(data) == []


@needs_nvcc
@pytest.mark.parametrize("name", ATTACKS)
def test_each_policy_attack_is_refused_by_the_machine_code_alone(tmp_path, name):
    data = cubin_without_ptx_rules((KERNELS / "bad" / name).read_text(), tmp_path)
    bad = sassdesc.violations(data)
    assert bad and "memory descriptor" in bad[0], bad


def test_a_guarded_driver_load_is_not_a_load_on_the_path_where_the_guard_fails():
    assert check("""
        @P0 ULDC.64 UR4, c[0x0][0x208]
        LDG.E R0, desc[UR4][R2.64]
        EXIT""")


def test_a_use_under_the_guard_of_its_write_passes_and_any_other_is_refused():
    write = "@!P0 R2UR UR6, R20\n@!P0 R2UR UR7, R21\n"
    load = "LDC.64 R20, c[0x0][0x208]\n"
    assert check(load + write + "@!P0 STG.E desc[UR6][R12.64], R9\nEXIT") == []
    assert check(load + write + "@P0 STG.E desc[UR6][R12.64], R9\nEXIT")
    assert check(load + write + "ISETP.GT.AND P0, PT, R10, 0x1fff, PT\n@!P0 STG.E desc[UR6][R12.64], R9\nEXIT")


def test_a_loop_reaches_a_fixpoint_that_keeps_the_driver_descriptor():
    assert check("""
        ULDC.64 UR4, c[0x0][0x208]
        top:
        LDG.E R0, desc[UR4][R2.64]
        UMOV UR6, UR4
        UMOV UR7, UR5
        UMOV UR4, UR6
        UMOV UR5, UR7
        @P0 BRA `(top)
        EXIT""") == []


def test_a_loop_back_edge_that_rewrites_the_descriptor_is_refused():
    assert check("""
        ULDC.64 UR4, c[0x0][0x208]
        top:
        LDG.E R0, desc[UR4][R2.64]
        UIADD3 UR4, UR4, 0x1, URZ
        @P0 BRA `(top)
        EXIT""")


def test_arithmetic_memory_and_other_driver_words_are_refused():
    for make in ("ULDC.64 UR4, c[0x0][0x208]\nUIADD3 UR5, UR5, 0x100, URZ",     # arithmetic on it
                 "LDG.E.64 R4, desc[UR8][R2.64]\nR2UR UR4, R4\nR2UR UR5, R5",    # read from memory
                 "ULDC.64 UR4, c[0x0][0x28]",                                  # another driver word
                 "ULDC.64 UR6, c[0x0][0x208]\nUMOV UR4, UR6\nUMOV UR5, 0x1ef00000"):   # half and half
        assert check("ULDC.64 UR8, c[0x0][0x208]\n" + make + "\nLDG.E R0, desc[UR4][R2.64]\nEXIT"), make


def test_only_words_laid_out_as_createpolicy_makes_them_pass():
    chain = "UMOV UR4, {f:#x}\nUSHF.R.U32 UR4, UR4, 0x4, URZ\nUMOV UR5, {hi:#x}\n" \
            "ULOP3.LUT UR5, UR5, 0xf, UR4, 0xf8, !UPT\nUSHF.L.U32 UR5, UR5, 0x14, URZ\nUMOV UR4, {lo}\n" \
            "LDG.E R0, desc[UR4][R2.64]\nEXIT"
    assert check(chain.format(f=0xF0, hi=0x140, lo="URZ")) == []     # evict_last 1.0
    assert check(chain.format(f=0x70, hi=0x160, lo="URZ")) == []     # evict_normal 0.5
    assert check(chain.format(f=0xF0, hi=0x340, lo="URZ"))           # a marker createpolicy never writes
    assert check(chain.format(f=0xF0, hi=0x140, lo="0x1"))           # a low word that is not zero


def test_a_call_forgets_what_its_callee_writes():
    body = """
        ULDC.64 UR4, c[0x0][0x208]
        CALL.REL.NOINC `(sub)
        LDG.E R0, desc[UR4][R2.64]
        EXIT
        sub:
        {}
        RET.REL.NODEC R2 `(k)"""
    assert check(body.format("MOV R3, 0x1")) == []
    assert check(body.format("UMOV UR4, 0x1"))


def test_an_indirect_branch_is_refused_when_a_descriptor_is_used():
    assert check("ULDC.64 UR4, c[0x0][0x208]\nBRX R2 -0xc0\nLDG.E R0, desc[UR4][R2.64]\nEXIT")


def test_a_call_through_a_register_is_refused_when_a_descriptor_is_used():
    # (review 35: `CALL.REL.NOINC R2 `(k)` names the kernel's own label; the callee, where the
    # store was, went unreached and unchecked)
    bad = check("ULDC.64 UR4, c[0x0][0x208]\nLDG.E R0, desc[UR4][R2.64]\nCALL.REL.NOINC R2 `(k)\nEXIT")
    assert bad and "computed address" in bad[0], bad


def test_a_divergence_branch_naming_its_mask_register_is_followed():
    # (`BRA.DIV UR4, `(.L_x_9)`: every stream-family cubin has one; UR4 is the mask it tests, the
    # label its target, so it is no computed branch)
    assert check("ULDC.64 UR4, c[0x0][0x208]\nBRA.DIV UR6, `(.L1)\nLDG.E R0, desc[UR4][R2.64]\n.L1:\nEXIT") == []


def test_a_descriptor_sharing_registers_with_a_uniform_address_is_refused():
    # (sm_90a, nvcc 13.0: cp.async.ca with a cache_hint policy and a uniform shared address; the
    # pair UR5:UR6 below would pass on its own: a zero low word, a createpolicy high word)
    words = "UMOV UR5, URZ\nUMOV UR6, 0x14f00000\nUMOV UR4, 0x400\n"
    assert check(words + "LDG.E R0, desc[UR5][R2.64]\nEXIT") == []
    for use in ("LDGSTS.E.128 [UR4], desc[UR5][R2.64]", "LDGSTS.E.BYPASS.128 [UR4+0x200], desc[UR5][R2.64]",
                "LDGSTS.E.128 [UR6], desc[UR5][R2.64]"):
        assert check(words + use + "\nEXIT"), use
    assert check(words + "LDGSTS.E.128 [UR40], desc[UR5][R2.64]\nEXIT") == []   # another register
