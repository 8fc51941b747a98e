"""The machine-code rule on the parameter bank's generic address (0x198): it may be offset to a TMA
descriptor and given to a TMA instruction, and go nowhere else, on any path."""

import pytest

from cudal2.harness import paramflow

HEAD = "\t.section\t.text.k,\"ax\",@progbits\n"


def sass(*lines: str) -> str:
    """A disassembly of kernel k in nvdisasm's layout: instructions numbered, labels on their own line."""
    out, addr = [HEAD], 0
    for ln in lines:
        if ln.endswith(":"):
            out.append(ln + "\n")
        else:
            out.append(f"        /*{addr:04x}*/                   {ln} ;\n")
            addr += 0x10
    return "".join(out)


# What ptxas emits for a __grid_constant__ descriptor (tests/kernels/good/tma_v2.cu, sm90raw).
HONEST = (
    "ULDC.64 UR12, c[0x0][0x198]",
    "UIADD3 UR14, UP0, UR12, 0x70, URZ",
    "UIADD3.X UR15, URZ, UR13, URZ, UP0, !UPT",
    "UTMACCTL.PF [UR14]",
    "ULDC.64 UR12, c[0x0][0x208]",          # the registers reused for the memory descriptor
    "LDG.E R2, desc[UR12][R4.64]",
    "UMOV UR5, UR14",
    "UTMALDG.2D [UR8], [UR14]",
    "EXIT",
)


def test_the_descriptor_pattern_passes():
    assert paramflow.check(sass(*HONEST)) == []


# What ptxas also emits for a descriptor: the address loaded into vector registers, offset there
# with a carry, moved back and forth between the register files (an sm90raw point at 2048x8192x8192).
HONEST_VECTOR = (
    "LDC.64 R58, c[0x0][0x198]",
    "@!P2 IADD3 R5, P0, R58, 0x170, RZ",
    "@!P2 R2UR UR6, R5",
    "@!P2 IMAD.X R6, RZ, RZ, R59, P0",
    "@!P2 R2UR UR9, R6",
    "IMAD.U32 R6, RZ, RZ, UR6",
    "@!P2 R2UR UR12, R6",
    "IMAD.U32 R7, RZ, RZ, UR9",
    "@!P2 R2UR UR13, R7",
    "PLOP3.LUT P0, PT, PT, PT, PT, 0x80, 0x0",
    "UTMASTG.2D [UR16], [UR12]",
    "HGMMA.64x128x16.F32 R24, gdesc[UR20], RZ",  # R58, R59 reused inside an accumulator range
    "FADD R2, R58, R59",
    "EXIT",
)


def test_a_guarded_load_for_a_prefetch_passes():
    # (a prefetch of a descriptor in a divergent branch: ptxas guards the load itself)
    assert paramflow.check(sass("@!P0 LDC.64 R2, c[0x0][0x198]", "@!P0 R2UR UR4, R2", "@!P0 R2UR UR5, R3",
                                "@!P0 UTMACCTL.PF [UR4]", "EXIT")) == []


def test_the_vector_register_route_passes():
    assert paramflow.check(sass(*HONEST_VECTOR)) == []


LOAD = "LD.E R9, [R2.64]"   # a generic load through whatever R2 holds


@pytest.mark.parametrize("lines, says", [
    (("LDC.64 R4, c[0x0][0x198]", "LD.E R2, [R4.64]", "EXIT"), "R4"),                    # a load through it
    (("IADD3 R4, R4, c[0x0][0x19c], RZ", "EXIT"), "plain load"),
    (("@P0 LDC.64 R4, c[0x0][0x198]", LOAD.replace("R2", "R4"), "EXIT"), "R4"),   # a guarded load taints too
    (("ULDC.64 UR4, c[0x0][0x198]", "MOV R2, UR4", "MOV R3, UR5", LOAD, "EXIT"), "R2"),   # moved, then loaded
    (("ULDC.64 UR4, c[0x0][0x198]", "UIADD3 UR6, UR4, -0x168, URZ", "IMAD.U32 R2, RZ, RZ, UR6", LOAD, "EXIT"),
     "R2"),
    (("ULDC.64 UR4, c[0x0][0x198]", "IADD3 R2, R7, UR4, RZ", "EXIT"), "UR4"),           # offset by a register
    (("ULDC.64 UR4, c[0x0][0x198]", "UIADD3 UR6, UR4, UR9, URZ", "EXIT"), "UR4"),
    (("ULDC.64 UR4, c[0x0][0x198]", "STG.E desc[UR8][R6.64], UR4", "EXIT"), "UR4"),     # stored as a value
    (("ULDC.64 UR4, c[0x0][0x198]", "UBLKCP.S.G [UR8], [UR4], UR10", "EXIT"), "UR4"),      # a bulk copy from it
    (("ULDC.64 UR4, c[0x0][0x198]", "MOV R3, UR5", "MOV R2, 0x10", LOAD, "EXIT"), "R3"),   # the high half of a pair
    (("LDC.64 R4, c[0x0][0x198]", "STG.E.128 desc[UR8][R8.64], R2", "EXIT"), "R4"),       # inside a 128-bit value
    (("ULDC.64 UR4, c[0x0][0x198]", "UIADD3 UR6, UP0, UR4, 0x8, URZ", "@UP0 BRA `(.L_x_1)", "EXIT", ".L_x_1:",
      "EXIT"), "UP0"),                                                                        # a branch on its carry
    (("ULDC.64 UR4, c[0x0][0x198]", "UISETP.NE.U32.AND UP1, UPT, UR4, URZ, UPT", "EXIT"), "UR4"),
    (("ULDC.64 UR4, c[0x0][0x198]", "UTMALDG.2D [UR8], [UR14], UR4", "EXIT"), "UR4"),      # not in brackets
    (("ULDC.64 UR4, c[0x0][0x198]", "UIADD3 UR4, UR4, -0x168, URZ", "MOV R2, UR4", LOAD, "EXIT"), "R2"),  # in place
    (("ULDC.64 UR4, c[0x0][0x198]", "@UP0 UMOV UR4, URZ", "MOV R2, UR4", LOAD, "EXIT"), "R2"),  # a guarded kill
    (("ULDC.64 UR4, c[0x0][0x198]", "@P1 R2UR P0, UR4, R5", "MOV R2, UR4", LOAD, "EXIT"), "R2"),
    # A path that jumps over the kill keeps the address (a linear scan would miss it).
    (("ULDC.64 UR4, c[0x0][0x198]", "@P0 BRA `(.L_x_1)", "UMOV UR4, URZ", ".L_x_1:", "MOV R2, UR4", LOAD, "EXIT"),
     "R2"),
    # Round a loop: the use comes before the load in the text, after it in time.
    ((".L_x_0:", "MOV R2, UR4", LOAD, "ULDC.64 UR4, c[0x0][0x198]", "@P0 BRA `(.L_x_0)", "EXIT"), "R2"),
    # An accumulator range ends before the address's registers: they still hold it.
    (("LDC.64 R58, c[0x0][0x198]", "HGMMA.64x64x16.F32 R24, gdesc[UR4], RZ", "LD.E R9, [R58.64]", "EXIT"), "R58"),
    # (tenth review) a conversion reads the pair its 64-bit type names; NANOSLEEP reads, never writes
    (("ULDC.64 UR4, c[0x0][0x198]", "MOV R5, UR5", "MOV R4, RZ", "I2F.F64.U64 R6, R4", "EXIT"), "R5"),
    (("LDC.64 R4, c[0x0][0x198]", "NANOSLEEP R4", LOAD.replace("R2", "R4"), "EXIT"), "R4"),
    (("ULDC.64 UR4, c[0x0][0x198]", "UMOV UR8, URZ", "UMOV UR9, UR5", "UBLKCP.S.G [UR10], [UR8], UR12", "EXIT"),
     "UR9"),                                                  # the high half of an unbracketed-width address
    (("LDC.64 R58, c[0x0][0x198]", "HGMMA.64x128x16.F32 R24, gdesc[UR4], R24", "EXIT"), "R58"),  # accumulators
    # (eleventh review) stmatrix .x2 and IMMA read more registers than they name
    (("LDC.64 R10, c[0x0][0x198]", "STSM.16.M88.2 [R6], R10", "EXIT"), "R10"),
    (("LDC.64 R14, c[0x0][0x198]", "IMMA.16816.S8.S8 R8, R8.ROW, R8.COL, R12", "EXIT"), "R14"),
    (("LDC.64 R24, c[0x0][0x198]", "DMMA.16x8x16 R32, R16, R32, R8", "EXIT"), "R24"),   # A is 16 registers
    (("ULDC.64 UR4, c[0x0][0x198]", "UIADD3 UR6, UP0, UR4, 0x8, URZ", "UP2UR UR9, UPR, URZ, 0x7f", "EXIT"),
     "UP0"),                                                                 # the whole predicate file
])
def test_any_other_use_on_any_path_is_refused(lines, says):
    bad = paramflow.check(sass(*lines))
    assert bad and says in bad[0], bad


@pytest.mark.parametrize("kill", ["UMOV UR4, URZ", "R2UR UR4, R7", "R2UR P0, UR4, R7", "UIMAD.WIDE UR4, UR8, 0x3, URZ"])
def test_a_write_on_every_path_clears_it(kill):
    assert paramflow.check(sass("ULDC.64 UR4, c[0x0][0x198]", kill, "MOV R2, UR4", "FADD R9, R2, R2", "EXIT")) == []


def test_a_carry_out_is_written_not_read():
    # (eleventh review's false positives) a carry left by the descriptor's offset is overwritten
    # by a later carry out, or by USETMAXREG's result, not read
    for write in ("UIADD3 UR16, UP0, -UR8, UR10, URZ", "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8"):
        assert paramflow.check(sass("ULDC.64 UR4, c[0x0][0x198]", "UIADD3 UR6, UP0, UR4, 0x70, URZ",
                                    "UIADD3.X UR7, URZ, UR5, URZ, UP0, !UPT", "UTMACCTL.PF [UR6]", write,
                                    "PLOP3.LUT P0, PT, PT, PT, UP0, 0x80, 0x0", "EXIT")) == [], write


def test_a_wide_write_clears_both_halves():
    assert paramflow.check(sass("ULDC.64 UR4, c[0x0][0x198]", "UIMAD.WIDE UR4, UR8, 0x3, URZ", "MOV R3, UR5",
                                "LD.E R9, [R2.64]", "FADD R1, R3, R3", "EXIT")) == []
    assert paramflow.check(sass("ULDC.64 UR4, c[0x0][0x198]", "UMOV UR4, URZ", "MOV R3, UR5", "FADD R1, R3, R3",
                                "EXIT"))


@pytest.mark.parametrize("branch", ["BRX R2 -0x10", "JMX R2", "BRA `(.L_nowhere)"])
def test_a_graph_it_cannot_complete_is_refused(branch):
    assert "cannot" in paramflow.check(sass("ULDC.64 UR4, c[0x0][0x198]", branch, "EXIT"))[0]


def test_a_call_returns_to_its_caller_with_the_address():
    bad = paramflow.check(sass("CALL.REL.NOINC `(f)", "MOV R2, UR4", LOAD, "EXIT",
                               "f:", "ULDC.64 UR4, c[0x0][0x198]", "RET.REL.NODEC R20 `(k)"))
    assert bad and "R2" in bad[0]
