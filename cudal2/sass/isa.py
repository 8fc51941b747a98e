"""What the legality checker needs to know about each sm_90 opcode: may it move at all, which
memory it reads and writes, and whether its latency is fixed.

Guarantees (by construction, a whitelist):
- an opcode that is not in FIXED, VARIABLE or MEMORY is pinned ("unknown opcode"): the checker
  never moves what this table does not describe;
- pinned (`OpClass.pinned` names why): control flow, anything PC-relative, barriers and
  scoreboard/barrier bookkeeping (BAR, DEPBAR, LDGDEPBAR, SYNCS, ARRIVES, WARPSYNC, BSSY/BSYNC),
  fences and cache control, the asynchronous tensor-core and copy engines (HGMMA, WARPGROUP,
  UTMA*, UBLK*), warp-election and register reconfiguration, clock reads, NOPs, and memory
  operations with ordering semantics (.STRONG, .MMIO, .VOLATILE, .SYS, .GPU scopes), and
  never-executed memory operations (`@!PT LDS RZ, [RZ]` after LDGSTS: ptxas's, reason unknown);
- `variable` is True for every opcode that can complete after the next instructions issue
  (memory, MUFU, conversions, S2R, SHFL, ...). Saying "variable" of a fixed-latency opcode only
  makes the checker stricter; the reverse would not, so the table errs that way, and any
  instruction that sets a scoreboard counts as variable whatever its opcode;
- memory spaces: "global", "shared", "local"; a generic access (LD/ST/ATOM) touches all three.
  Constant-bank loads (LDC, ULDC) read memory no kernel can write and count as no access.

Does not: know real latencies (there is no sm_90 latency table yet), which variable-latency
opcodes share an in-order queue, or whether two addresses differ; the checker assumes the worst
on all three.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cudal2.sass.disasm import Instr

ALL_SPACES = frozenset({"global", "shared", "local"})
G, S, L = frozenset({"global"}), frozenset({"shared"}), frozenset({"local"})
NONE = frozenset()

# Fixed-latency register-to-register work (ptxas never gives these a scoreboard on sm_90).
FIXED = {
    "IMAD", "IADD3", "IADD", "LEA", "LOP3", "LOP", "SHF", "VIADD", "VIADDMNMX", "IABS", "SEL", "MOV", "ISETP",
    "VIMNMX", "IMNMX", "IDP", "IDP4A", "VABSDIFF", "VABSDIFF4", "PRMT", "SGXT", "BMSK", "PLOP3", "P2R", "R2P",
    "CS2R", "FADD", "FMUL", "FFMA", "FSETP", "FSEL", "FMNMX", "F2FP", "HADD2", "HMUL2", "HFMA2", "HSETP2",
    "HMNMX2", "HMMA", "IMMA", "VOTE", "VOTEU",
    "UIADD3", "UIMAD", "ULEA", "ULOP3", "ULOP", "USHF", "UMOV", "USEL", "UISETP", "UPLOP3", "UPRMT", "USGXT",
    "UBMSK", "ULDC",
}
# Register results that may arrive later than any stall count says.
VARIABLE = {
    "S2R", "S2UR", "MUFU", "I2F", "F2I", "F2F", "I2I", "I2FP", "F2IP", "FRND", "FCHK", "SHFL", "POPC", "FLO",
    "BREV", "UFLO", "UPOPC", "UBREV", "DADD", "DMUL", "DFMA", "DSETP", "DMNMX", "R2UR", "REDUX", "MATCH", "LDC",
}
# opcode -> (spaces read, spaces written). All variable latency.
MEMORY = {
    "LDG": (G, NONE), "STG": (NONE, G), "LDS": (S, NONE), "LDSM": (S, NONE), "STS": (NONE, S), "STSM": (NONE, S),
    "LDL": (L, NONE), "STL": (NONE, L), "LD": (ALL_SPACES, NONE), "ST": (NONE, ALL_SPACES),
    "LDGSTS": (G, S), "ATOM": (ALL_SPACES, ALL_SPACES), "ATOMG": (G, G), "ATOMS": (S, S), "RED": (G, G),
    "REDG": (G, G),
}
PINNED_GROUPS = {
    "control flow": {"BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "CALL", "RET", "EXIT", "BREAK", "BSSY", "BSYNC",
                     "WARPSYNC", "KILL", "BPT", "RTT", "YIELD", "NANOSLEEP", "BMOV", "B2R", "R2B"},
    "barrier or scoreboard bookkeeping": {"BAR", "DEPBAR", "LDGDEPBAR", "SYNCS", "ARRIVES", "UCGABAR_ARV",
                                          "UCGABAR_WAIT", "CGAERRBAR"},
    "fence or cache control": {"MEMBAR", "FENCE", "ERRBAR", "CCTL", "CCTLL", "CCTLT"},
    "asynchronous tensor core or copy engine": {"HGMMA", "IGMMA", "QGMMA", "BGMMA", "WARPGROUP", "UTMALDG",
                                                "UTMASTG", "UTMAPF", "UTMACCTL", "UTMACMDFLUSH", "UBLKCP",
                                                "UBLKRED", "UBLKPF", "UTMAREDG"},
    "warp election or register reconfiguration": {"ELECT", "USETMAXREG", "SETMAXREG"},
    "no-op": {"NOP"},
}
_PINNED = {op: why for why, ops in PINNED_GROUPS.items() for op in ops}
PC_RELATIVE = {"BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "CALL", "RET", "BREAK", "BSSY", "WARPSYNC", "BPT"}
_ORDERED = re.compile(r"\.(STRONG|MMIO|VOLATILE|SYS|GPU|CTA|RELEASE|ACQUIRE)\b")
_CLOCK = re.compile(r"SR_(CLOCK|GLOBALTIMER)")


@dataclass(frozen=True)
class OpClass:
    pinned: str | None          # why it never moves (nothing crosses it either); None if it may move
    variable: bool              # may complete after later instructions issue
    reads: frozenset            # memory spaces read
    writes: frozenset           # memory spaces written
    pc_relative: bool

    @property
    def memory(self) -> bool:
        return bool(self.reads or self.writes)


def classify(ins: Instr) -> OpClass:
    base = ins.base
    pc_rel = base in PC_RELATIVE or ins.target is not None
    reads, writes = MEMORY.get(base, (NONE, NONE))
    sets_scoreboard = bool(ins.ctrl.sets)
    pinned = _PINNED.get(base)
    if pinned is None and pc_rel:
        pinned = "PC-relative"
    if pinned is None and base in MEMORY and _ORDERED.search(ins.opcode):
        pinned = "memory access with ordering semantics"
    if pinned is None and base in MEMORY and ins.pred in ("@!PT", "@!UPT"):
        pinned = "never-executed memory access (a placeholder ptxas put there for a reason it does not say)"
    if pinned is None and any(_CLOCK.search(op) for op in ins.operands):
        pinned = "reads a clock"
    if pinned is None and base not in FIXED and base not in VARIABLE and base not in MEMORY:
        pinned = "unknown opcode"
    variable = base in VARIABLE or base in MEMORY or sets_scoreboard or base not in FIXED
    return OpClass(pinned=pinned, variable=variable, reads=reads, writes=writes, pc_relative=pc_rel)


def may_alias(a: OpClass, b: OpClass) -> frozenset:
    """The spaces where a and b may touch the same bytes with at least one of them writing."""
    return (a.writes & (b.reads | b.writes)) | (b.writes & a.reads)
