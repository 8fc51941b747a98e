"""Where the parameter bank's generic address goes in a v2 cubin's machine code.

The driver word at 0x198 of constant bank 0 is the generic address of the launch's parameters;
ptxas reads it for one purpose, to name a `__grid_constant__` TMA descriptor to the tensor-memory
unit. As a plain pointer it reaches the driver's words below the parameters (%gridid, the constant
bank's own address) with ordinary loads, which the PTX rules refuse by spelling and which a
spelling got past twice (the eighth and ninth reviews). This check follows the value itself.

Guarantees: `check(sass)` refuses, one line per kind,
- a read of 0x198-0x19f by anything but a load into registers (`ULDC`, or `LDC` into vector
  registers, which ptxas sometimes uses on the way to a TMA instruction);
- any use of a register or predicate (vector or uniform) that may hold that address, or a value
  moved or offset from it, on some path (a may-taint analysis over the control-flow graph, to a
  fixpoint), other than
  - a move or an add whose other operands are constants or zero registers (`MOV`, `UMOV`, `IADD3`,
    `UIADD3`, `IMAD` as ptxas uses it to move and carry, `R2UR`): what offsets the address to a
    descriptor and moves it between the register files; their results are followed too;
  - a bracketed operand of a TMA instruction (`UTMALDG`, `UTMASTG`, `UTMAREDG`, `UTMAPF`,
    `UTMACCTL`): the descriptor's address, or a shared address or coordinates, which the unit
    reads as such and which give nothing away;
  so no load, store or bulk copy through it, no store of it, no comparison, branch or select on
  it, and no offset by a register;
- it fails closed: in a cubin that loads the address at all, an indirect branch (`BRX`, `JMX`,
  `JMP`) or a branch to a label it cannot find is refused, since the graph would be incomplete.

What an instruction writes is known only for a list of opcodes (`_WRITES`), by a width that never
overstates it (a 64-bit pair, a 128-bit quad, an MMA's accumulator range; a conversion's first
register only); any other instruction writes nothing here and every register it names is a read
(`NANOSLEEP R4` reads R4). Reads are sized generously: a bare source is one register only for
the opcodes of `_NARROW` (a pair or quad where a 64- or 128-bit type is spelled), a quad for any
other opcode, and a bracketed address is a pair unless the opcode addresses shared memory. So an
error in either table can refuse an honest cubin, never pass a use (the tenth and eleventh reviews
passed the address through registers read unseen: `I2F.F64.U64`'s high half, stmatrix .x2's second
register, IMMA's accumulator quad; and through `NANOSLEEP R4`, taken for a write).

Does not: check which descriptor an offset lands on (the tensor-memory unit reads a descriptor
from the parameter space and faults on anything else).
"""

from __future__ import annotations

import re

PARAM_ADDRESS = range(0x198, 0x1A0)
_PROPAGATE = ("UMOV", "UIADD3", "MOV", "IADD3", "IMAD", "R2UR")   # op (before its first '.') that may carry it
_TMA = ("UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF", "UTMACCTL")
_INDIRECT = ("BRX", "JMX", "JMP", "BRXU", "JMXU")

_INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;")
_LABEL = re.compile(r"^\s*([\w.$]+):\s*$")     # `.L_x_3:`, and a function's own name
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_GUARD = re.compile(r"^@!?(U?P\w+)\s+")
_TRACKED = re.compile(r"(?<![\w.])(U?R\d+|U?P\d+)(?![\w])")   # (RZ/URZ/PT/UPT are constants)
_REG = re.compile(r"U?R\d+|U?P\d+")
_PRED = re.compile(r"U?P\d+|U?PT")
_TARGET = re.compile(r"`\(([^)]+)\)")
_CONST = re.compile(r"\bc\[0x0\]\[(0x[0-9a-f]+)\]")
_HGMMA = re.compile(r"GMMA\.64x(\d+)x\d+\.(F32|F16)")


class _Insn:
    __slots__ = ("text", "guard", "op", "base", "args", "section")

    def __init__(self, text: str, section: str):
        self.text, self.section = text, section
        g = _GUARD.match(text)
        self.guard = g.group(1) if g else None
        rest = text[g.end():] if g else text
        self.op, _, tail = rest.partition(" ")
        self.base = self.op.split(".")[0]
        self.args = _split(tail)


def _split(tail: str) -> list[str]:
    """Operands at top level (a comma inside brackets does not split)."""
    out, depth, cur = [], 0, ""
    for ch in tail:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [a for a in out + [cur.strip()] if a]


# Opcodes known to write their first operand (after a predicate out for R2UR and SHFL). Any other
# instruction writes nothing as far as this check knows, and every register it names is a read.
_WRITES = frozenset("""
    IADD3 IMAD IMADSP LOP3 SHF LEA PRMT SEL FSEL MOV IABS IMNMX VIMNMX POPC FLO BREV BMSK SGXT VIADD IDP
    FADD FMUL FFMA FMNMX MUFU F2F F2I I2F I2I F2FP FRND HADD2 HMUL2 HFMA2 HMNMX2 DADD DMUL DFMA
    ISETP FSETP DSETP HSETP2 PLOP3 P2R VOTE LDG LD LDS LDSM LDC LDL S2R CS2R HMMA HGMMA IMMA R2UR SHFL VIADDMNMX
    UMOV UIADD3 UIMAD ULOP3 ULOP USHF ULEA USEL UPRMT UFLO UPOPC UBREV UISETP UPLOP3 USGXT UBMSK ULDC S2UR
    VOTEU REDUX USETMAXREG
""".split())
# Predicates an opcode writes right after its destination (a carry out, a second comparison
# result): written, never read. R2UR's predicate comes before its destination.
_PRED_OUTS = {"IADD3": 2, "UIADD3": 2, "LEA": 1, "ULEA": 1, "IMAD": 1, "UIMAD": 1, "ISETP": 1, "FSETP": 1,
              "DSETP": 1, "HSETP2": 1, "UISETP": 1, "PLOP3": 1, "UPLOP3": 1}
_CONVERT = ("F2F", "F2I", "I2F", "I2I")
_WIDE = re.compile(r"\.(?:64|U64|S64|F64)\b")


def _width(i: _Insn) -> int:
    """Registers its destination surely covers (never more: an overstated width would clear a
    register the instruction leaves as it was)."""
    if m := _HGMMA.search(i.op):   # a 64xN accumulator tile over 128 threads
        return int(m.group(1)) // (2 if m.group(2) == "F32" else 4)
    if i.base == "HMMA":
        return 4 if ".F32" in i.op else 2
    if i.base in _CONVERT:         # `I2F.U64`: which width is the destination's is not spelled
        return 1
    if ".128" in i.op or re.search(r"\.M?T?88\.4\b", i.op):
        return 4
    if ".64" in i.op or ".WIDE" in i.op or re.search(r"\.M?T?88\.2\b", i.op) or i.base in ("DADD", "DMUL", "DFMA"):
        return 2
    return 1


# Opcodes whose bare register sources are each one 32-bit register (a pair or a quad where a 64-
# or 128-bit type is spelled). Any other opcode's bare vector sources are read as quads and its
# uniform ones as pairs: stmatrix, IMMA and the like read more than their operands spell.
_NARROW = frozenset("""
    IADD3 IMAD LOP3 SHF LEA PRMT SEL FSEL MOV IABS IMNMX VIMNMX POPC FLO BREV BMSK SGXT VIADD FADD FMUL FFMA
    FMNMX MUFU F2FP FRND HADD2 HMUL2 HFMA2 HMNMX2 ISETP FSETP HSETP2 PLOP3 R2UR SHFL VOTE F2F F2I I2F I2I VIADDMNMX
    STS STG ST STL LDS LDG LD LDC LDL S2R CS2R P2R BAR
    UMOV UIADD3 UIMAD ULOP3 ULOP USHF ULEA USEL UPRMT UFLO UPOPC UBREV UISETP UPLOP3 USGXT UBMSK ULDC S2UR VOTEU
""".split())


def _read_width(i: _Insn) -> int:
    """Registers each bare vector source may cover: an accumulator range for HGMMA, a quad where a
    128-bit type is spelled, a pair where a 64-bit type is (`I2F.F64.U64 R6, R4` reads R4 and R5),
    one register for a `_NARROW` opcode, else a quad."""
    if m := _HGMMA.search(i.op):
        return int(m.group(1)) // (2 if m.group(2) == "F32" else 4)
    if "MMA" in i.base:            # DMMA.16x8x16 reads 16 registers of A
        return 16
    if ".128" in i.op or re.search(r"\.M?T?88\.4\b", i.op) or i.base not in _NARROW:
        return 4
    if _WIDE.search(i.op) or i.base in ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX"):
        return 2
    return 1


def _span(reg: str, n: int) -> list[str]:
    kind, k = re.match(r"(U?[RP])(\d+)", reg).groups()
    return [f"{kind}{int(k) + j}" for j in range(n)]


def _dest_at(i: _Insn) -> int:
    """Index of the operand the instruction writes, or -1: the first operand of a `_WRITES` opcode
    when that is a bare register or predicate (R2UR's and SHFL's second, after a predicate out)."""
    if i.base not in _WRITES:
        return -1
    k = 1 if i.base in ("R2UR", "SHFL") and len(i.args) > 1 and _PRED.fullmatch(i.args[0]) else 0
    return k if k < len(i.args) and _REG.fullmatch(i.args[k]) else -1


def _pred_outs(i: _Insn) -> list[int]:
    """Indices of the predicates the instruction writes besides its destination."""
    at = _dest_at(i)
    if at < 0:
        return []
    if i.base in ("R2UR", "SHFL") and at == 1:
        return [0]
    out = []
    for k in range(at + 1, min(at + 1 + _PRED_OUTS.get(i.base, 0), len(i.args))):
        if not _PRED.fullmatch(i.args[k]):
            break
        out.append(k)
    return out


def _dests(i: _Insn) -> tuple[list[str], list[str]]:
    """(registers it writes, predicates it writes besides them): its destination (a pair, a quad
    or a range by `_width`), and its carry outs or second results (`_PRED_OUTS`)."""
    at = _dest_at(i)
    if at < 0:
        return [], []
    first = _span(i.args[at], _width(i)) if re.fullmatch(r"U?R\d+", i.args[at]) else [i.args[at]]
    return first, [i.args[k] for k in _pred_outs(i) if not i.args[k].endswith("PT")]


_OPERAND_REG = re.compile(r"(?<![\w.])(U?R\d+|U?P\d+)(\.64)?(?![\w])")
_SHARED = ("LDS", "STS", "ATOMS", "SYNCS", "LDSM", "STSM", "REDS")   # bracketed addresses of 32 bits
_BRACKET = re.compile(r"(g?desc)?\[([^\]]*)\]")


def _sources(i: _Insn) -> list[str]:
    """The tracked names among the operands it reads (every operand but its destination), each
    register with those it may imply: a bare vector register is `_read_width` wide, a bare uniform
    one a pair where a 64-bit type is spelled; in brackets, `desc[UR]` is a pair and `gdesc[UR]`
    four, `R2.64` a pair, and any other address a pair unless the instruction addresses shared
    memory (32 bits)."""
    at = _dest_at(i)
    skip = {at, *_pred_outs(i)}
    out: list[str] = []

    def regs(text: str, width) -> None:
        for reg, pair in _OPERAND_REG.findall(text):
            out.extend([reg] if reg.startswith(("P", "UP")) else _span(reg, max(2 if pair else 1, width(reg))))

    last = max((k for k, a in enumerate(i.args) if k not in skip and not _PRED.fullmatch(a.lstrip("!"))),
               default=-1)
    for k, a in enumerate(i.args):
        if k in skip:
            continue
        if re.fullmatch(r"U?PR", a):        # the whole predicate file (P2R R2, PR, RZ, 0x7f)
            out.extend(f"{a[:-1]}{n}" for n in range(7))
            continue
        if ".WIDE" in i.op and k == last:   # IMAD.WIDE's addend is a pair (its factors are 32 bits)
            regs(a, lambda r: 2)
            continue
        for kind, inner in _BRACKET.findall(a):
            n = 4 if kind == "gdesc" else 2 if kind == "desc" or i.base not in _SHARED else 1
            regs(inner, lambda r, n=n: n)
        regs(_BRACKET.sub(" ", a), lambda r: _read_width(i) if r.startswith("R") else
             (2 if _WIDE.search(i.op) or i.base not in _NARROW else 1))
    return out


def _reads(i: _Insn) -> set[str]:
    """Every tracked name the instruction reads, its guard included."""
    return set(_sources(i)) | ({i.guard} if i.guard else set())


def _parse(sass: str) -> tuple[list[_Insn], dict[str, int]]:
    insns: list[_Insn] = []
    labels: dict[str, int] = {}
    section = ""
    for line in sass.splitlines():
        if m := _SECTION.match(line):
            section = m.group(1)
        elif m := _LABEL.match(line):
            labels[m.group(1)] = len(insns)
        elif m := _INSN.match(line):
            insns.append(_Insn(m.group(2), section))
    return insns, labels


def _successors(insns: list[_Insn], labels: dict[str, int]) -> tuple[list[list[int]], str]:
    after_calls = [k + 1 for k, i in enumerate(insns) if i.base == "CALL"]
    succ: list[list[int]] = []
    for k, i in enumerate(insns):
        nxt = [k + 1] if k + 1 < len(insns) and insns[k + 1].section == i.section else []
        if i.base in _INDIRECT:
            return [], f"`{i.text}` branches to a computed address: the machine-code check cannot follow it"
        if i.base in ("BRA", "CALL"):
            t = _TARGET.search(i.text)
            if not t or t.group(1) not in labels:
                return [], f"`{i.text}` branches to a place the machine-code check cannot find"
            out = [labels[t.group(1)]] + (nxt if i.guard or i.base == "CALL" else [])
        elif i.base == "EXIT":
            out = nxt if i.guard else []
        elif i.base == "RET":
            out = after_calls + (nxt if i.guard else [])
        else:
            out = nxt
        succ.append(out)
    return succ, ""


def _transfer(i: _Insn, live: frozenset[str]) -> frozenset[str]:
    sure, more = _dests(i)
    out = set(live)
    if not i.guard:
        out -= set(sure) | set(more)   # a guarded write may not happen: the old value may survive
    tainted_source = bool(_reads(i) & live) and i.base in _PROPAGATE
    reads_address = i.base in ("ULDC", "LDC") and any(int(o, 16) in PARAM_ADDRESS for o in _CONST.findall(i.text))
    if tainted_source or reads_address:
        # (R2UR's predicate says whether the lanes agreed: a value moved and offset by constants
        # only is the same in every lane, so it carries nothing of the address)
        out |= set(sure) | (set(more) if i.base in _PRED_OUTS else set())
    return frozenset(out)


def _use_allowed(i: _Insn, tainted: set[str]) -> bool:
    if i.guard in tainted:
        return False
    if i.base in _PROPAGATE:   # moved or offset by constants only: every other source is a constant
        return all(n in tainted for n in _sources(i)) and "c[" not in i.text
    if i.base in _TMA:         # only inside its brackets: the descriptor's address, or (harmless: the
        # unit reads them as a shared address and tensor coordinates) its other register groups,
        # where ptxas reuses a register a guarded write may have left holding the address
        bare = " ".join(re.sub(r"\[[^\]]*\]", " ", a) for a in i.args)
        return not (set(_TRACKED.findall(bare)) & tainted)
    return False


def check(sass: str) -> list[str]:
    """What the disassembly `sass` does with the parameter bank's generic address that it may not."""
    insns, labels = _parse(sass)
    bad: dict[str, str] = {}
    for i in insns:
        offs = [int(o, 16) for o in _CONST.findall(i.text)]
        if any(o in PARAM_ADDRESS for o in offs) and i.base not in ("ULDC", "LDC"):   # (guarded or not)
            bad.setdefault("read", f"`{i.text}` in {i.section} reads the parameter bank's generic address (0x198) "
                                   "other than by a plain load into registers")
    if not any(_transfer(i, frozenset()) for i in insns):
        return list(bad.values())   # nothing ever holds the address: no graph to follow
    succ, problem = _successors(insns, labels)
    if problem:
        return list(bad.values()) + [problem]
    live_in = [frozenset()] * len(insns)
    work = list(range(len(insns)))
    while work:
        k = work.pop()
        out = _transfer(insns[k], live_in[k])
        for s in succ[k]:
            if not out <= live_in[s]:
                live_in[s] = live_in[s] | out
                work.append(s)
    for k, i in enumerate(insns):
        tainted = set(_reads(i) & live_in[k])
        if tainted and not _use_allowed(i, tainted):
            bad.setdefault("use", f"`{i.text}` in {i.section} uses {', '.join(sorted(tainted))}, which may hold the "
                                  "parameter bank's generic address: it may only be moved, offset by constants "
                                  "and given to a TMA instruction")
            break
    return list(bad.values())
