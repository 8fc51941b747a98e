"""The machine-code rule on the parameter bank's generic address (0x198): it may be offset to a TMA
descriptor and given to a TMA instruction, and go nowhere else, on any path.

Which registers an instruction reads and writes is nvdisasm's to say, so what an opcode does with
its operands is tested on real cubins (ptxas on a small PTX kernel); how the analysis follows
paths, guards and calls is tested on listings whose life-range marks are written out."""

import subprocess

import pytest

from cudal2.harness import paramflow

from .listings import listing

# --- real cubins ------------------------------------------------------------------------------

# A kernel whose first two parameters are TMA descriptors (`cvta.param` of one is what ptxas reads
# 0x198 for), with a global output, a count, shared memory and an mbarrier at hand.
PTX = """.version 8.8
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 tmA[128], .param .align 64 .b8 tmB[128], .param .u64 out, .param .u32 n)
{
  .reg .b64 %g, %gb, %o, %d<8>; .reg .b32 %r<16>, %l, %h, %n, %t, %s, %mb, %x; .reg .pred %q<4>;
  .reg .f64 %f<20>; .reg .f32 %y<4>;
  .shared .align 128 .b8 sm[4096]; .shared .align 8 .b64 bar;
  cvta.param.u64 %g, tmA;
  cvta.param.u64 %gb, tmB;
  ld.param.u64 %o, [out];
  ld.param.u32 %n, [n];
  cvta.to.global.u64 %o, %o;
  mov.u32 %t, %tid.x;
  mov.u32 %s, sm;
  mov.u32 %mb, bar;
BODY
  ret;
}
"""
SPLIT = "mov.b64 {%l, %h}, %g;"    # the address's halves, %h the high one
LOAD_A = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%s], [%g, {%t, %n}], [%mb];"


def cubin(tmp_path, body: str) -> bytes:
    (tmp_path / "k.ptx").write_text(PTX.replace("BODY", body))
    subprocess.run(["ptxas", "-arch=sm_90a", "-O3", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                   check=True, capture_output=True)
    return (tmp_path / "k.cubin").read_bytes()


def check(tmp_path, body: str) -> list[str]:
    return paramflow.violations(cubin(tmp_path, body))


def test_the_descriptor_pattern_passes(tmp_path):
    # prefetched, loaded through from both descriptors (one offset, with a carry), and the
    # registers reused for ordinary global memory
    assert check(tmp_path, f"""mbarrier.init.shared.b64 [%mb], 1; prefetch.tensormap [%g]; {LOAD_A}
        cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%s], [%gb, {{%n, %t}}], [%mb];
        ld.global.u32 %r1, [%o]; st.global.u32 [%o+4], %r1;""") == []


def test_a_store_from_divergent_lanes_passes(tmp_path):
    # per-lane coordinates: ptxas loops until R2UR finds them uniform, branching on its flag
    assert check(tmp_path, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%gb, {%t, %n}], [%s]; "
                           "cp.async.bulk.commit_group;") == []


def test_a_carry_out_is_written_not_read(tmp_path):
    # the descriptor's offset leaves a carry; a later 64-bit add of other values writes a new one
    assert check(tmp_path, "prefetch.tensormap [%gb]; add.u64 %d1, %o, 0x123456789; st.global.u64 [%o], %d1;") == []


@pytest.mark.parametrize("body, says", [
    ("ld.u32 %r1, [%g]; st.global.u32 [%o], %r1;", "LD"),                       # a load through it
    ("st.global.u64 [%o], %g;", "STG"),                                          # stored as a value
    (f"{SPLIT} st.global.u32 [%o], %h;", "STG"),                                  # its high half alone
    ("add.u64 %d1, %g, %o; st.global.u64 [%o], %d1;", "UIADD3"),                 # offset by a register
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%s], [%g], 16, [%mb];", "UBLKCP"),
    ("setp.eq.u64 %q1, %g, 0; @%q1 st.global.u32 [%o], %n;", "P0"),              # compared
    ("prefetch.tensormap [%g]; ts: .branchtargets A, B; and.b32 %r1, %t, 1; brx.idx %r1, ts; A: st.global.u32 [%o], %n; bra.uni E; "
     "B: st.global.u32 [%o+4], %n; E:", "cannot follow"),                          # an incomplete graph
])
def test_a_use_is_refused(tmp_path, body, says):
    bad = check(tmp_path, body)
    assert bad and says in bad[-1], bad


# Registers an instruction reads without naming them (each once passed a hand-written table).
@pytest.mark.parametrize("body, says", [
    (f"{SPLIT} st.shared.v4.b32 [%s], {{%n, %n, %n, %h}};", "STS.128"),          # a quad's last register
    ("st.global.v2.u64 [%o], {%d1, %g};", "STG.E.128"),                         # a 128-bit value's upper pair
    (f"{SPLIT} stmatrix.sync.aligned.m8n8.x2.shared.b16 [%s], {{%n, %h}};", "STSM"),   # .x2's second register
    (f"{SPLIT} mov.b64 %d1, {{%n, %h}}; cvt.rn.f64.u64 %f1, %d1; st.global.f64 [%o], %f1;", "I2F"),  # a pair's high half
    (f"{SPLIT} mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {{%r1,%r2,%r3,%r4}}, {{%n,%n,%n,%n}}, {{%n,%n}}, "
     "{%n,%n,%h,%n}; st.global.v4.u32 [%o], {%r1,%r2,%r3,%r4};", "IMMA"),       # an accumulator quad
    ("mov.b64 %f5, %g; mov.b64 %f1, 0d3FF0000000000000; mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 "
     "{%f10,%f11,%f12,%f13}, {%f1,%f1,%f1,%f1,%f5,%f1,%f1,%f1}, {%f1,%f1,%f1,%f1}, {%f1,%f1,%f1,%f1}; "
     "st.global.v2.f64 [%o], {%f10,%f11};", "DMMA"),                            # A: 16 registers
    (f"{SPLIT} mov.b32 %y0, %n; mov.b32 %y1, %n; mov.b32 %y2, %h; mov.b32 %y3, %n; cvt.u64.u32 %d1, %n; "
     "wgmma.fence.sync.aligned; wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%y0,%y1,%y2,%y3}, %d1, %d1, "
     "1, 1, 1, 1, 1; wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned 0; "
     "st.global.v4.f32 [%o], {%y0,%y1,%y2,%y3};", "HGMMA"),                     # an accumulator range
    (f"{SPLIT} nanosleep.u32 %h;", "NANOSLEEP"),                                # a read, not a write
])
def test_implicit_operands_are_read(tmp_path, body, says):
    bad = check(tmp_path, body)
    assert bad and says in bad[-1], bad


def test_a_branch_on_a_carry_out_is_refused(tmp_path):
    # (the carry of the address plus a constant compares its low half with that constant)
    bad = check(tmp_path, f"{SPLIT} add.cc.u32 %r1, %l, 0x7fffffff; addc.u32 %r2, 0, 0; setp.ne.u32 %q1, %r2, 0; "
                          "@%q1 st.global.u32 [%o], %n;")
    assert bad and "P0" in bad[-1], bad


def test_r2urs_uniformity_flag_carries_the_address(tmp_path):
    # Lane 0 holds the address's low half and the others a guess, as a TMA coordinate: ptxas loops
    # until R2UR finds the lanes agree, so how often it loops says whether the guess was right.
    bad = check(tmp_path, """ld.global.u32 %x, [%o]; setp.eq.u32 %q1, %t, 0; @!%q1 bra SKIP; mov.b64 {%l, %h}, %g;
        add.u32 %x, %l, 0; SKIP:
        cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%gb, {%x, %n}], [%s]; cp.async.bulk.commit_group;""")
    assert bad and "P0" in bad[-1], bad


CALLEE = """.version 8.8
.target sm_90a
.address_size 64
.func (.param .b64 r) f (.param .b64 x)
{
  .reg .b64 %a;
  ld.param.b64 %a, [x];
  FUNC
  st.param.b64 [r], %a;
  ret;
}
.visible .entry k(.param .align 64 .b8 tmA[128], .param .u64 out)
{
  .reg .b64 %g, %o, %v; .reg .b32 %r1;
  cvta.param.u64 %g, tmA;
  ld.param.u64 %o, [out];
  cvta.to.global.u64 %o, %o;
  { .param .b64 a0; .param .b64 r0; st.param.b64 [a0], %g; call (r0), f, (a0); ld.param.b64 %v, [r0]; }
  KERNEL
  ret;
}
"""


@pytest.mark.parametrize("func, kernel, says", [
    ("st.u32 [%a], 0;", "", "ST.E"),                                 # stored through in the callee
    ("", "ld.u32 %r1, [%v]; st.global.u32 [%o], %r1;", "LD.E"),    # returned, and loaded through by the caller
])
def test_a_call_is_followed_in_and_out(tmp_path, func, kernel, says):
    (tmp_path / "k.ptx").write_text(CALLEE.replace("FUNC", func).replace("KERNEL", kernel))
    subprocess.run(["ptxas", "-arch=sm_90a", "-O3", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                   check=True, capture_output=True)
    data = (tmp_path / "k.cubin").read_bytes()
    bad = paramflow.violations(data)
    assert bad and says in bad[-1], bad


def test_a_cubin_it_cannot_read_is_refused():
    assert "could not be read" in paramflow.violations(b"\x7fELF not really")[0]


# --- listings with their life-range marks written out -------------------------------------------

def run(*rows: str, **functions: tuple[str, ...]) -> list[str]:
    return paramflow.check({"k": listing(*rows), **{f: listing(*r, name=f) for f, r in functions.items()}})


ULDC = "ULDC.64 UR4, c[0x0][0x198] | | UR4 UR5"
ULDC_R = "LDC.64 R2, c[0x0][0x198] | | R2 R3"
LOAD = "LD.E R9, desc[UR8][R2.64] | R2 R3 UR8 UR9 | R9"     # a generic load through whatever R2 holds
MOVE = "MOV R2, UR4 | UR4 | R2"
EXIT = "EXIT"


def test_moves_and_offsets_by_constants_pass():
    assert run(ULDC, "UIADD3 UR6, UP0, UR4, 0x70, URZ | UR4 | UR6 UP0", "UIADD3.X UR7, URZ, UR5, URZ, UP0, !UPT | UR5 UP0 | UR7",
               "UMOV UR10, UR6 | UR6 | UR10", "UMOV UR11, UR7 | UR7 | UR11",
               "UTMACCTL.PF [UR10] | UR10 UR11", EXIT) == []


@pytest.mark.parametrize("rows, says", [
    ((ULDC, MOVE, LOAD, EXIT), "R2"),
    (("IADD3 R4, R4, c[0x0][0x19c], RZ | R4 | R4", EXIT), "plain load"),   # read by anything but a load
    (("@P0 " + ULDC, MOVE, LOAD, EXIT), "R2"),                              # a guarded load taints too
    ((ULDC_R, "IADD3 R2, P0, R2, c[0x0][0x210], RZ | R2 | R2 P0", EXIT), "R2"),   # offset by a parameter
    ((ULDC, "IADD3 R2, R7, UR4, RZ | R7 UR4 | R2", EXIT), "UR4"),         # offset by a register
    ((ULDC, "UTMALDG.2D.MULTICAST [UR8], [UR14], UR4 | UR4 UR8 UR9 UR14 UR15", EXIT), "UR4"),   # a TMA's bare operand
    ((ULDC, "UTMALDG.2D [UR8], [UR14], UR4 | UR4 UR5 UR8 UR9 UR14 UR15", EXIT), "UR5"),   # ... and what follows it
    ((ULDC, "UIADD3 UR6, UP0, UR4, 0x8, URZ | UR4 | UR6 UP0", "@UP0 BRA `(.L_x_1) | UP0", EXIT, ".L_x_1:", EXIT), "UP0"),
    # a register the text names and the table does not mark is read
    ((ULDC_R, "NANOSLEEP R2", EXIT), "R2"),
    # `PR` is the whole predicate file, which the table does not mark
    ((ULDC, "UIADD3 UR6, UP0, UR4, 0x8, URZ | UR4 | UR6 UP0", "PLOP3.LUT P3, PT, UP0, PT, PT, 0x80, 0x0 | UP0 | P3",
      "P2R R3, PR, RZ, 0x8 | | R3", EXIT), "PLOP3"),
    ((ULDC, "UIADD3 UR6, UP0, UR4, 0x8, URZ | UR4 | UR6 UP0", "UP2UR UR9, UPR, URZ, 0x7f | | UR9", EXIT), "UP0"),
])
def test_a_use_in_a_listing_is_refused(rows, says):
    bad = run(*rows)
    assert any(says in b for b in bad if "TMA descriptor" not in b), bad


def test_a_tma_instruction_may_hold_it_in_its_brackets():
    # the unmarked registers after a bracketed one are that operand's (coordinates)
    assert run(ULDC, "UMOV UR10, UR4 | UR4 | UR10", "UMOV UR14, UR4 | UR4 | UR14", "UMOV UR15, UR5 | UR5 | UR15",
               "UTMALDG.2D [UR8], [UR14] | UR8 UR9 UR10 UR11 UR14 UR15", EXIT) == []


# --- a TMA descriptor is a harness parameter on every path ---------------------------------------

DESC = ("UIADD3 UR14, UP0, UR4, 0x70, URZ | UR4 | UR14 UP0", "UIADD3.X UR15, URZ, UR5, URZ, UP0, !UPT | UR5 UP0 | UR15")
TMA = "UTMALDG.2D [UR8], [UR14] | UR8 UR9 UR14 UR15"
FROM_GLOBAL = "LDG.E.64 R6, desc[UR10][R2.64] | UR10 UR11 R2 R3 | R6 R7"
# ptxas's single-issue idiom: lanes where P1 fails offset the address and move it to the uniform
# registers; the warp votes on P1, and the instruction runs where some lane had !P1.
VOTED = (ULDC_R, "@!P1 IADD3 R6, P0, R2, 0x170, RZ | P1 R2 | R6 P0", "VOTEU.ALL UP0, P1 | P1 | UP0",
         "@!P1 IMAD.X R7, RZ, RZ, R3, P0 | P1 R3 P0 | R7", "@!P1 R2UR UR14, R6 | P1 R6 | UR14",
         "@!P1 R2UR UR15, R7 | P1 R7 | UR15")


@pytest.mark.parametrize("rows", [
    (ULDC, *DESC, TMA, EXIT),
    (*VOTED, "@!UP0 " + TMA, EXIT),
    # a uniform guard holding the same vote as the one the offset was made under
    (ULDC, "VOTEU.ALL UP1, P2 | P2 | UP1", *(f"@!UP1 {d.replace('| U', '| UP1 U', 1)}" for d in DESC),
     "VOTEU.ALL UP0, P2 | P2 | UP0", "@!UP0 " + TMA.replace("| ", "| UP0 "), EXIT),
])
def test_a_descriptor_from_the_parameters_passes(rows):
    assert run(*rows) == []


@pytest.mark.parametrize("rows", [
    (ULDC, FROM_GLOBAL, "R2UR UR14, R6 | R6 | UR14", "R2UR UR15, R7 | R7 | UR15", TMA, EXIT),    # from global memory
    (FROM_GLOBAL, "R2UR UR14, R6 | R6 | UR14", "R2UR UR15, R7 | R7 | UR15", TMA, EXIT),          # nothing loads 0x198
    # the parameter on one path, global memory on the other
    (ULDC, *DESC, "@P0 BRA `(.L_x_1) | P0", FROM_GLOBAL, "R2UR UR14, R6 | R6 | UR14", ".L_x_1:", TMA, EXIT),
    (ULDC, *DESC, "@P3 R2UR UR14, R6 | P3 R6 | UR14", TMA, EXIT),                                  # a guarded overwrite
    (ULDC, *DESC, "@P3 " + TMA.replace("UR14", "UR20").replace("UR15", "UR21"), EXIT),              # another register
    # the vote's predicate written again before the offset
    (VOTED[0], "VOTEU.ALL UP0, P1 | P1 | UP0", "ISETP.NE.AND P1, PT, R9, RZ, PT | R9 | P1", *VOTED[1:2], *VOTED[3:],
     "@!UP0 " + TMA, EXIT),
    # a lane lost between the vote and the offset
    (VOTED[0], "VOTEU.ALL UP0, P1 | P1 | UP0", "@P4 EXIT | P4", *VOTED[1:2], *VOTED[3:], "@!UP0 " + TMA, EXIT),
    # the vote says some lane had !P1, the registers were written under P1
    (*[r.replace("@!P1", "@P1") for r in VOTED], "@!UP0 " + TMA, EXIT),
    # a uniform register is the warp's one value: lanes under !P1 overwrite what lanes under P1 moved
    (*VOTED, "@P1 R2UR UR14, R9 | P1 R9 | UR14", "VOTEU.ANY UP1, !P1 | P1 | UP1",
     "@UP1 " + TMA.replace("| ", "| UP1 "), EXIT),
])
def test_a_descriptor_from_anywhere_else_is_refused(rows):
    bad = run(*rows)
    assert any("TMA descriptor" in b for b in bad), bad


def test_a_descriptor_loaded_from_global_memory_is_refused(tmp_path):
    # a real cubin: a tensor map's address read from memory (one the kernel could have written)
    bad = check(tmp_path, "ld.global.u64 %d1, [%o]; prefetch.tensormap [%d1]; prefetch.tensormap [%g];")
    assert any("TMA descriptor" in b for b in bad), bad


@pytest.mark.parametrize("kill", ["UMOV UR4, URZ | | UR4", "R2UR UR4, R7 | R7 | UR4", "R2UR P0, UR4, R7 | R7 | P0 UR4"])
def test_an_unguarded_write_clears_it(kill):
    assert run(ULDC, kill, MOVE, "FADD R9, R2, R2 | R2 | R9", EXIT) == []


def test_a_wide_write_clears_what_the_table_marks():
    assert run(ULDC, "UIMAD.WIDE UR4, UR8, 0x3, URZ | UR8 | UR4 UR5", "MOV R3, UR5 | UR5 | R3", "FADD R1, R3, R3 | R3 | R1",
               EXIT) == []
    assert run(ULDC, "UIMAD UR4, UR8, 0x3, URZ | UR8 | UR4", "MOV R3, UR5 | UR5 | R3", "FADD R1, R3, R3 | R3 | R1", EXIT)


def test_the_whole_predicate_file_is_never_surely_written():
    assert run(ULDC, "UIADD3 UR6, UP0, UR4, 0x8, URZ | UR4 | UR6 UP0", "PLOP3.LUT P0, PT, UP0, PT, PT, 0x80, 0x0 | UP0 | P0",
               "R2P PR, R8, 0x7f | R8", "@P0 EXIT | P0", EXIT)


NOTHING = {}
QUIET_CALLEE = {"f": ("MOV R0, RZ | | R0", "RET.REL.NODEC R20 `(k) | R20 R21")}


@pytest.mark.parametrize("rows, functions", [
    ((ULDC, "@UP0 UMOV UR4, URZ | UP0 | UR4", MOVE, LOAD, EXIT), NOTHING),            # a guarded kill
    ((ULDC, "@P0 BRA `(.L_x_1) | P0", "UMOV UR4, URZ | | UR4", ".L_x_1:", MOVE, LOAD, EXIT), NOTHING),  # around it
    ((".L_x_0:", MOVE, LOAD, ULDC, "@P0 BRA `(.L_x_0) | P0", EXIT), NOTHING),          # round a loop
    # an accumulator range that ends below the address's registers
    (("LDC.64 R2, c[0x0][0x198] | | R2 R3", "HGMMA.64x64x16.F32 R4, gdesc[UR4], RZ | UR4 UR5 UR6 UR7 | "
      + " ".join(f"R{n}" for n in range(4, 36)), LOAD, EXIT), NOTHING),
    # a write under the same guard, after the guard's predicate was written again
    ((ULDC, "@P1 MOV R2, UR4 | P1 UR4 | R2", "ISETP.NE.AND P1, PT, R7, RZ, PT | R7 | P1", "@P1 MOV R2, RZ | P1 | R2",
      LOAD, EXIT), NOTHING),
    # a call's row lists what the callee may clobber; this callee leaves R2 alone
    ((ULDC_R, "CALL.REL.NOINC `(f) | R0 R1 | R0 R2 R3", LOAD, EXIT), QUIET_CALLEE),
])
def test_a_path_that_keeps_it_is_followed(rows, functions):
    bad = run(*rows, **functions)
    assert bad and "`LD.E" in bad[-1], bad


def test_a_guarded_write_clears_what_its_own_guard_let_in():
    # ptxas offsets the address under a guard, and overwrites the register under the same guard
    assert run(ULDC_R, "@!P1 IADD3 R4, P0, R2, 0x170, RZ | P1 R2 | R4 P0", "@!P1 IADD3 R4, R5, 0x1c000, RZ | P1 R5 | R4",
               "@!P1 IMAD.X R5, RZ, RZ, R3, P0 | P1 R3 P0 | R5", "@!P1 MOV R5, RZ | P1 | R5",
               "LD.E R9, desc[UR8][R4.64] | R4 R5 UR8 UR9 | R9", EXIT) == []


def test_a_use_under_the_opposite_guard_still_sees_it():
    # lanes where P1 held moved the address; the others read it from them
    bad = run(ULDC, "@P1 MOV R2, UR4 | P1 UR4 | R2", "@!P1 SHFL.IDX PT, R3, R2, RZ, 0x1f | P1 R2 | R3", EXIT)
    assert bad and "SHFL" in bad[-1], bad


def test_a_shuffle_may_read_a_lane_that_is_elsewhere():
    # this lane's path to the SHFL never holds the address in R2; a lane that branched away does
    bad = run(ULDC, "@P0 BRA `(.L_x_1) | P0", MOVE, "NANOSLEEP 0x100", EXIT, ".L_x_1:",
              "SHFL.IDX PT, R3, R2, RZ, 0x1f | R2 | R3", EXIT)
    assert bad and "SHFL" in bad[-1], bad


def test_a_graph_it_cannot_complete_is_refused():
    for branch in ("BRX R2 -0x10 | R2 R3", "JMX R2 | R2 R3", "BRA `(.L_nowhere)", "CALL.ABS.NOINC R2 | R0 R1 R2 R3"):
        assert "cannot" in run(ULDC, branch, EXIT)[-1], branch


def test_a_call_through_a_register_is_refused_though_nvdisasm_prints_a_label():
    # (review 35: ptxas, sm_90a, nvcc 13.0, a function pointer: `CALL.REL.NOINC R2 `(k)`; the label
    # is the section's own, not the target, and was read as a call to the kernel's entry)
    for branch in ("CALL.REL.NOINC R2 `(k) | R2 R3", "RTT | "):
        assert "computed address" in run(ULDC, branch, EXIT)[-1], branch
    assert run("CALL.REL.NOINC `(f)", EXIT, f=("RET.REL.NODEC R20 `(k) | R20 R21",)) == []
    # a divergence branch names the mask it tests, not its target (`BRA.DIV UR4, `(.L_x_9)`, every
    # stream-family cubin)
    assert run(ULDC, "BRA.DIV UR6, `(.L1) | UR6", ".L1:", EXIT) == []


def test_a_function_without_life_ranges_is_refused():
    # (the table missing, a quad's implicit registers would go unseen)
    assert "life ranges" in run("ULDC.64 UR4, c[0x0][0x198]", "STS.128 [R2], R4", EXIT)[-1]


def test_a_call_returns_to_its_caller_with_the_address():
    bad = run("CALL.REL.NOINC `(f) | R0 R1 | UR4 UR5", MOVE, LOAD, EXIT,
              f=(ULDC, "RET.REL.NODEC R20 `(k) | R20 R21"))
    assert bad and "R2" in bad[-1], bad


def test_nothing_is_followed_where_the_address_is_never_loaded():
    assert run(MOVE, LOAD, "BRX R2 -0x10 | R2 R3", EXIT) == []


def test_an_honest_sm90raw_point_the_hand_tables_refused_builds(tmp_path):
    # Read as a quad, `SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR14+0x16000], R4` "used" R6 and R7,
    # which still held the descriptor's address; the table says it reads R4 alone.
    from cudal2.config import BuildConfig
    from cudal2.harness.build import build
    from cudal2.kernels.family import get_family
    from cudal2.problem import Problem
    q = {"BM": 128, "BN": 64, "CLUSTER": 1, "CONSUMERS": 2, "EPI": "tma", "GROUP_M": 16, "MAX_CTAS": 132,
         "SCHED": "tiles", "SPLIT_K": 1, "STAGES": 3}
    r = build(get_family("sm90raw").render(q, Problem(64, 64, 64)), BuildConfig(cache_dir=str(tmp_path)))
    assert r.ok, r.reason


def test_a_use_on_the_converged_path_after_bra_div_is_seen():
    # BRA.DIV jumps only when the warp is diverged: the fall-through is ptxas's fast path
    # (fourteenth review: it was treated as an unconditional branch, and its fall-through unchecked)
    assert run(ULDC, "VOTEU.ANY UR6, UPT, PT | | UR6", "BRA.DIV UR6, `(.L_x_2) | UR6", MOVE, LOAD, ".L_x_2:", EXIT)


@pytest.mark.parametrize("arith", ["UIADD3 UR6, UR4, UR4, URZ | UR4 | UR6",      # doubled: its bits shift up
                                   "UIADD3 UR6, -UR4, 0x10, URZ | UR4 | UR6",    # negated
                                   "IMAD R2, R3, 0x2, RZ | R3 | R2"])            # scaled
def test_arithmetic_on_the_address_is_refused_even_into_a_tma_coordinate(arith):
    # the fifteenth review doubled the address 23 times (every source held it, so each add passed
    # as a move) and handed the result to a TMA load as a coordinate: one bit per launch
    rows = (ULDC, "MOV R3, UR4 | UR4 | R3", arith, "R2UR UR6, R2 | R2 | UR6", "UTMALDG.2D [UR8], [UR6] | UR6 UR8 |", EXIT)
    bad = run(*rows)
    assert bad and arith.split("|")[0].strip() in bad[0], bad


# --- the constant lands on a tensor-map parameter of the kernel (review 53) ---------------------

def run_with(tmaps, *rows):
    return paramflow.check({"k": listing(*rows)}, {"k": frozenset(tmaps)})


@pytest.mark.parametrize("rows, at", [
    ((ULDC, *DESC, TMA, EXIT), 0x70),                                              # offset, then carry
    ((*VOTED, "@!UP0 " + TMA, EXIT), 0x170),                                       # ptxas's single-issue idiom
    ((ULDC, "UIADD3 UR6, UP0, UR4, 0x40, URZ | UR4 | UR6 UP0", "UIADD3.X UR7, URZ, UR5, URZ, UP0, !UPT | UR5 UP0 | UR7",
      "UIADD3 UR14, UP1, UR6, 0x30, URZ | UR6 | UR14 UP1", "UIADD3.X UR15, URZ, UR7, URZ, UP1, !UPT | UR7 UP1 | UR15",
      TMA, EXIT), 0x70),                                                           # two offsets add up
])
def test_a_descriptor_must_land_on_a_tensor_map_parameter(rows, at):
    assert run_with({at}, *rows) == []
    bad = run_with({at + 0x80}, *rows)
    assert len(bad) == 1 and hex(at) in bad[0] and "no tensor-map parameter" in bad[0], bad


def test_a_descriptor_whose_constant_differs_by_path_is_refused():
    rows = (ULDC, *DESC, "@P0 BRA `(.L_x_1) | P0", "UIADD3 UR14, UP0, UR4, 0xf0, URZ | UR4 | UR14 UP0", ".L_x_1:", TMA, EXIT)
    assert run_with({0x70, 0xf0}, *rows)


TMA4 = "UTMALDG.2D [UR8], [UR4] | UR8 UR9 UR4 UR5"


@pytest.mark.parametrize("rows", [
    # review 54: a guarded offset of the loaded address, then an unguarded TMA: the constant is 0x80
    # where P0 held, so it is not 0 on every path
    (ULDC, "@P0 UIADD3 UR4, UP0, UR4, 0x80, URZ | P0 UR4 | UR4 UP0", TMA4, EXIT),
    # an IMAD by zero whose addend is a constant computes the constant, not the address plus it
    (ULDC_R, "IMAD R6, R2, RZ, 0x70 | R2 | R6", "MOV R7, R3 | R3 | R7", "R2UR UR14, R6 | R6 | UR14",
     "R2UR UR15, R7 | R7 | UR15", TMA, EXIT),
    # a constant added to the high word
    (ULDC, "UIADD3 UR14, UP0, UR4, 0x70, URZ | UR4 | UR14 UP0", "UIADD3.X UR15, URZ, UR5, 0x1, UP0, !UPT | UR5 UP0 | UR15",
     TMA, EXIT),
])
def test_a_descriptor_the_constant_tracking_cannot_vouch_for_is_refused(rows):
    assert run_with({0x0, 0x70, 0x80}, *rows)



def test_past_its_budget_a_cubin_is_refused_and_within_it_passes(tmp_path, monkeypatch):
    # review 77: nothing bounded the machine-code rules' time (outside the compiler's timeout); the
    # fixpoints now spend a budget (the shipped library's cubins: at most ~20 units an instruction)
    data = cubin(tmp_path, f"""mbarrier.init.shared.b64 [%mb], 1; {LOAD_A}""")
    assert paramflow.violations(data) == []
    monkeypatch.setattr(paramflow, "FLOW_UNITS", 10)
    monkeypatch.setattr(paramflow, "FLOW_UNITS_PER_STEP", 0)
    assert any("within its budget" in v for v in paramflow.violations(data))
