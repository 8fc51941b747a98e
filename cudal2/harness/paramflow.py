"""Where the parameter bank's generic address goes in a v2 cubin's machine code.

The driver word at 0x198 of constant bank 0 is the generic address of the launch's parameters;
ptxas reads it for one purpose, to name a `__grid_constant__` TMA descriptor to the tensor-memory
unit. As a plain pointer it reaches the driver's words below the parameters (%gridid, the constant
bank's own address) with ordinary loads, which the PTX rules refuse by spelling and which a
spelling got past twice (the eighth and ninth reviews). This check follows the value itself.

Guarantees: `check(sass)` refuses, one line per kind,
- a read of 0x198-0x19f by anything but `ULDC` into uniform registers;
- any use of a uniform register or predicate that may hold that address, or a value computed from
  it, on some path (a may-taint analysis over the control-flow graph, to a fixpoint), other than
  by uniform integer moves and adds (`UMOV`, `UIADD3`, `UIADD3.X`: what offsets it to a
  descriptor; their results are followed too) and as a bracketed operand of a TMA instruction
  (`UTMALDG`, `UTMASTG`, `UTMAREDG`, `UTMAPF`, `UTMACCTL`): no move to a vector register, no
  generic or bulk load or store through it, no comparison, branch or select on it;
- it fails closed: in a cubin that loads the address at all, an indirect branch (`BRX`, `JMX`,
  `JMP`) or a branch to a label it cannot find is refused, since the graph would be incomplete.

Known false positive: ptxas sometimes loads the address into vector registers (`LDC.64 R58,
c[0x0][0x198]`, then `IADD3`/`IMAD.X`/`R2UR` back to uniform registers) on its way to a TMA
instruction (1 of 26 sm90raw points surveyed); such a cubin is refused. Following vector
registers too needs kills that know how many registers each instruction writes (HGMMA's
accumulator ranges, 128-bit loads), else an honest kernel's later reuse of a register reads as a
use of the address.

Does not: check which descriptor an offset lands on (the tensor-memory unit reads a descriptor
from the parameter space and faults on anything else), or follow vector registers (a tainted
value may never reach one).
"""

from __future__ import annotations

import re

PARAM_ADDRESS = range(0x198, 0x1A0)
_PROPAGATE = ("UMOV", "UIADD3")                 # op (before its first '.') that may carry the address
_TMA = ("UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF", "UTMACCTL")
_INDIRECT = ("BRX", "JMX", "JMP", "BRXU", "JMXU")

_INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;")
_LABEL = re.compile(r"^\s*([\w.$]+):\s*$")     # `.L_x_3:`, and a function's own name
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_GUARD = re.compile(r"^@!?(U?P\w+)\s+")
_TRACKED = re.compile(r"(?<![\w.])(UR\d+|UP\d+)(?![\w])")   # (URZ/UPT are constants)
_TARGET = re.compile(r"`\(([^)]+)\)")
_CONST = re.compile(r"\bc\[0x0\]\[(0x[0-9a-f]+)\]")


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


def _pair(reg: str) -> list[str]:
    kind, n = re.match(r"(U?[RP])(\d+)", reg).groups()
    return [reg, f"{kind}{int(n) + 1}"]


def _dests(i: _Insn) -> tuple[list[str], list[str]]:
    """(what the instruction surely writes, what it may also write): its first operand when that is
    a bare uniform register or predicate (a register pair for 64-bit and wide ops; R2UR's after its
    predicate out), and the bare uniform predicates right after it (a carry out)."""
    args = i.args
    if i.base == "R2UR" and args and re.fullmatch(r"P\d+|PT", args[0]):
        args = args[1:]    # `R2UR P0, UR6, R5`: a predicate out, then the register written
    if not args or not re.fullmatch(r"UR\d+|UP\d+", args[0]):
        return [], []
    wide = (".64" in i.op or ".WIDE" in i.op) and args[0].startswith("UR")
    first = _pair(args[0]) if wide else [args[0]]
    more = []
    for a in args[1:]:
        if re.fullmatch(r"UP\d+|UPT", a):
            more.append(a)
        else:
            break
    return first, more


def _reads(i: _Insn) -> set[str]:
    """Every tracked name the instruction names except its sure destination; its guard included."""
    sure, _ = _dests(i)
    at = (1 if i.base == "R2UR" and i.args and not i.args[0].startswith("U") else 0) if sure else -1
    names = set(_TRACKED.findall(" ".join(a for k, a in enumerate(i.args) if k != at)))   # sources, however named
    if i.guard:
        names.add(i.guard)
    return names


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
    reads_address = i.base == "ULDC" and any(int(o, 16) in PARAM_ADDRESS for o in _CONST.findall(i.text))
    if tainted_source or reads_address:
        out |= set(sure) | {m for m in more if m != "UPT"}
    return frozenset(out)


def _use_allowed(i: _Insn, tainted: set[str]) -> bool:
    if i.base in _PROPAGATE:
        return True
    if i.base in _TMA:   # only as an address operand (in brackets), never as the guard
        bare = " ".join(re.sub(r"\[[^\]]*\]", " ", a) for a in i.args)
        return i.guard not in tainted and not (set(_TRACKED.findall(bare)) & tainted)
    return False


def check(sass: str) -> list[str]:
    """What the disassembly `sass` does with the parameter bank's generic address that it may not."""
    insns, labels = _parse(sass)
    bad: dict[str, str] = {}
    for i in insns:
        offs = [int(o, 16) for o in _CONST.findall(i.text)]
        if any(o in PARAM_ADDRESS for o in offs) and i.base != "ULDC":
            bad.setdefault("read", f"`{i.text}` in {i.section} reads the parameter bank's generic address (0x198) "
                                   "other than into uniform registers for a TMA descriptor")
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
                                  "parameter bank's generic address: it may only be offset to a TMA descriptor "
                                  "and given to a TMA instruction")
            break
    return list(bad.values())
