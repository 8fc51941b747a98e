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
    `UTMACCTL`);
  so no load, store or bulk copy through it, no store of it, no comparison, branch or select on
  it, and no offset by a register;
- it fails closed: in a cubin that loads the address at all, an indirect branch (`BRX`, `JMX`,
  `JMP`) or a branch to a label it cannot find is refused, since the graph would be incomplete.

How many registers an instruction writes (a 64-bit pair, a 128-bit quad, an MMA's accumulator
range) decides what a write clears; a write it cannot size clears only its first register, so an
error there can refuse an honest cubin, never pass a use.

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


def _span(reg: str, n: int) -> list[str]:
    kind, k = re.match(r"(U?[RP])(\d+)", reg).groups()
    return [f"{kind}{int(k) + j}" for j in range(n)]


def _width(i: _Insn) -> int:
    """Registers written from the first destination on."""
    if m := _HGMMA.search(i.op):   # a 64xN accumulator tile over 128 threads
        return int(m.group(1)) // (2 if m.group(2) == "F32" else 4)
    if i.base == "HMMA":
        return 4 if ".F32" in i.op else 2
    if ".128" in i.op or re.search(r"\.M?T?88\.4\b", i.op):
        return 4
    if ".64" in i.op or ".WIDE" in i.op or re.search(r"\.M?T?88\.2\b", i.op) or i.base in ("DADD", "DMUL", "DFMA"):
        return 2
    return 1


def _dest_at(i: _Insn) -> int:
    """Index of the operand the instruction writes, or -1: its first operand when that is a bare
    register or predicate (R2UR's second, after a predicate out)."""
    k = 1 if i.base == "R2UR" and len(i.args) > 1 and _PRED.fullmatch(i.args[0]) else 0
    return k if k < len(i.args) and _REG.fullmatch(i.args[k]) else -1


def _dests(i: _Insn) -> tuple[list[str], list[str]]:
    """(what the instruction surely writes, what it may also write): its destination (a pair, a
    quad or a range by `_width`), and the bare predicates right after it (a carry out)."""
    at = _dest_at(i)
    if at < 0:
        return [], []
    first = _span(i.args[at], _width(i)) if re.fullmatch(r"U?R\d+", i.args[at]) else [i.args[at]]
    more = []
    for a in i.args[at + 1:]:
        if not _PRED.fullmatch(a):
            break
        if not a.endswith("PT"):
            more.append(a)
    return first, more


_OPERAND_REG = re.compile(r"(?<![\w.])(U?R\d+|U?P\d+)(\.64)?(?![\w])")


def _sources(i: _Insn) -> list[str]:
    """The tracked names among the operands it reads (its destination's operand left out), each
    register with the ones it implies: `R2.64` is R2 and R3, and a bare vector register of a wide
    instruction is as wide as its data (a 128-bit store's value is four registers)."""
    at = _dest_at(i)
    out: list[str] = []
    for k, a in enumerate(i.args):
        if k == at:
            continue
        bracketed = "[" in a
        for reg, pair in _OPERAND_REG.findall(a):
            if reg.startswith(("P", "UP")):
                out.append(reg)
            elif pair or ("[" in a and reg.startswith("UR") and "desc[" in a):
                out += _span(reg, 2)
            elif reg.startswith("R") and not bracketed:
                out += _span(reg, min(_width(i), 4))
            else:
                out += _span(reg, 2 if ".64" in i.op and not bracketed else 1)
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
        out -= set(sure)   # a guarded write may not happen: the old value may survive
    tainted_source = bool(_reads(i) & live) and i.base in _PROPAGATE
    reads_address = i.base in ("ULDC", "LDC") and any(int(o, 16) in PARAM_ADDRESS for o in _CONST.findall(i.text))
    if tainted_source or reads_address:
        out |= set(sure) | set(more)
    return frozenset(out)


def _use_allowed(i: _Insn, tainted: set[str]) -> bool:
    if i.guard in tainted:
        return False
    if i.base in _PROPAGATE:   # moved or offset by constants only: every other source is a constant
        carry_out = set(_dests(i)[1])
        return all(n in tainted for n in _sources(i) if n not in carry_out) and "c[" not in i.text
    if i.base in _TMA:         # only as an address operand (in brackets)
        bare = " ".join(re.sub(r"\[[^\]]*\]", " ", a) for a in i.args)
        return not (set(_TRACKED.findall(bare)) & tainted)
    return False


def check(sass: str) -> list[str]:
    """What the disassembly `sass` does with the parameter bank's generic address that it may not."""
    insns, labels = _parse(sass)
    bad: dict[str, str] = {}
    for i in insns:
        offs = [int(o, 16) for o in _CONST.findall(i.text)]
        if any(o in PARAM_ADDRESS for o in offs) and (i.base not in ("ULDC", "LDC") or i.guard):
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
