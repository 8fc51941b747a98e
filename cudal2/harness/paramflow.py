"""Where the parameter bank's generic address goes in a v2 cubin's machine code.

The driver word at 0x198 of constant bank 0 is the generic address of the launch's parameters;
ptxas reads it for one purpose, to name a `__grid_constant__` TMA descriptor to the tensor-memory
unit. As a plain pointer it reaches the driver's words below the parameters (%gridid, the constant
bank's own address) with ordinary loads, which the PTX rules refuse by spelling and which a
spelling got past twice (the eighth and ninth reviews). This check follows the value itself.

Guarantees: `violations(cubin)` disassembles every function of the cubin (`cudal2.sass.disasm`:
one `nvdisasm -c -hex -plr -lrm narrow` run, each word checked against the cubin's bytes) and
`check(listings)` refuses, one line per kind,
- a read of 0x198-0x19f by anything but a load into registers (`ULDC`, or `LDC` into vector
  registers, which ptxas sometimes uses on the way to a TMA instruction), guarded or not;
- any use of a register or predicate (vector or uniform) that may hold that address, or a value
  computed from it, on some path (a may-taint analysis over the control-flow graph of all the
  cubin's functions, calls and returns included, to a fixpoint), other than
  - by a move or an add of constants (`MOV`, `UMOV`, `IADD3`, `UIADD3`, `IMAD` with a zero
    product as ptxas uses it to move and carry, `R2UR`): one register source at most, spelled
    plainly, that may hold it, and no constant-bank operand; what offsets the address by
    constants to a descriptor and moves it between the register files; their results are
    followed too (adding it to itself, negating or scaling it is a use);
  - by a TMA instruction (`UTMALDG`, `UTMASTG`, `UTMAREDG`, `UTMAPF`, `UTMACCTL`) inside its
    brackets: the descriptor's address, or a shared address or coordinates, where ptxas reuses a
    register that a guarded write may have left holding the address;
  so no load, store or bulk copy through it, no store of it, no comparison, select, shuffle,
  vote, reduction or matrix operation on it, no branch or guard on it or on a predicate computed
  from it (a carry out, `R2UR`'s uniformity flag), and no offset by a register; a shuffle (`SHFL`)
  may not read a register that may hold it at any point of the cubin, since the lane it reads
  may be elsewhere;
- a TMA instruction whose descriptor (its last bracket) is not, on every path, the address plus
  a constant (a must-analysis over the same graph, `_surely_transfer`), and, given the kernels'
  tensor-map offsets (`constbank.Params.tensor_maps`), one whose constant is not the same on every path
  or not the offset of one of the kernel's 128-byte parameters (review 53: 32 int arguments laid
  out as a descriptor): the tensor-memory unit takes a descriptor from global memory too, and one the kernel wrote there is a channel no rule
  reads (the descriptor cache, the edited fields). ptxas issues TMA from one lane with a guarded
  offset, an `R2UR` under the guard and a `VOTEU` of the guard's predicate as the instruction's
  own guard; the analysis correlates exactly that: a fact taken under a guard literal holds under
  the same literal or a uniform predicate holding the same vote, and a uniform register written
  under a lane predicate holds where a vote says some lane had it (a vote is forgotten where its
  predicate is rewritten or a lane may leave: a divergent branch, an exit, a call); anything else
  is refused (none of the 555 TMA cubins on this machine was, but the attack);
- it fails closed: a cubin nvdisasm cannot list or whose listing disagrees with its bytes is
  refused, and in a cubin that loads the address at all, an indirect branch or call (`BRX`,
  `JMX`, `JMP`, `RTT`, a `BRA`/`CALL` naming a register: nvdisasm prints the section's own
  label after it, `CALL.REL.NOINC R2 `(k)`, review 35) or a branch to a label it cannot find is refused, since the
  graph would be incomplete, and so is a function that names registers but has no life-range
  marks at all (the table is missing: its implicit operands would go unseen).

Which registers an instruction reads and writes comes from nvdisasm's life-range table, which
knows operand widths and implicit operands (a pair for a 64-bit type, quads of `LDS.128`, MMA
fragments, `stmatrix .x2`'s second register, HGMMA's accumulator range); a register the text
names that the table does not mark is taken as read and maybe written, and so is the whole
predicate file where an operand is `PR` or `UPR` (the table marks none of it). An instruction
that reads a register that may hold the address may have written it into everything it writes.
A write clears a register only where the table marks it written: unconditionally when the
instruction is unguarded, and, when guarded, only the taint it itself could have replaced (taken
under the same guard, the guard's predicate not written since); a call clears nothing (its
row in the table lists what the callee may clobber, and the graph follows the callee).

Does not:
- check which descriptor an offset lands on: a constant offset from the parameter bank reaches
  another window only at a distance the worker's random pad makes a guess;
- judge what a TMA instruction's shared address, coordinates or cache policy (its other bracketed
  operands) give away when they hold the address: ptxas leaves registers there that may hold it
  on some path (refusing those would refuse 52 of the 305 honest sm90raw points of the eleventh
  review);
- tell "may hold" from "holds": a move or constant add of a register that may hold the address
  is a move of it, though on some path the register may hold something else (its result is
  followed);
- see registers the table leaves out (RZ/PT, special and barrier registers): only the opcodes
  above may touch a value that may hold the address, and none of them writes those;
- correlate guards beyond a guarded write's clearing what the same guard let in (a use under
  `@!P0` of what a write under `@P0` left is a use: another lane may read it), so a guarded route
  can refuse an honest cubin, never pass a use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cudal2.sass import disasm
from cudal2.sass.disasm import Instr, Listing

PARAM_ADDRESS = range(0x198, 0x1A0)
# The opcode lists below say what an instruction does with a value, which the life-range
# table cannot: it says which registers are read and written, not whether a read is a move, an
# address or a comparison.
# What may carry the address (the opcode before its first '.'): a move, or an add or multiply-add
# whose every register source may hold the address too (so its other operands are constants or
# zero registers), and the move between the register files: what ptxas uses to offset the address
# to a descriptor and move it to the uniform registers.
_PROPAGATE = ("UMOV", "UIADD3", "MOV", "IADD3", "IMAD", "R2UR")
# The permitted sink: the tensor-memory unit reads its bracketed operands as addresses and
# coordinates, and a descriptor's address only from the parameter space.
_TMA = ("UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF", "UTMACCTL")
# A shuffle reads its source register in another lane, which may stand elsewhere in the program
# (outside the member mask, or diverged): the table says which register, not whose. So a shuffle's
# sources are judged against what may hold the address anywhere in the cubin. (Whether the
# hardware returns an inactive lane's register is not measured here; PTX calls it undefined.)
_CROSS_LANE = ("SHFL",)

_CONST = re.compile(r"\bc\[0x0\]\[(0x[0-9a-f]+)\]")
_TARGET = re.compile(r"`\(([^)]+)\)")
_BRACKET = re.compile(r"\[[^\]]*\]")
_NAMED = re.compile(r"(?<![\w.])(U?R\d+|U?P\d)(?![\w])")
_TRACKED = re.compile(r"(U?[RP])(\d+)")


def _named(text: str) -> set[str]:
    return set(_NAMED.findall(text))


@dataclass
class _Step:
    ins: Instr
    section: str
    cond: str | None            # its guard as written ("P1", "!UP0"; None: none, or @PT)
    guard: str | None           # the predicate register the guard reads (None: none, or PT)
    reads: frozenset[str]       # the table's reads, the registers it names that the table does not mark
    may: frozenset[str]         # what it may write: the table's writes, the same unmarked names
    kills: frozenset[str]       # what it overwrites whenever it executes: the table's writes
    loads: bool                 # an LDC/ULDC of the address

    @property
    def base(self) -> str:
        return self.ins.base

    @property
    def text(self) -> str:
        return self.ins.text

    def sources(self) -> frozenset[str]:
        """What it reads as operands: its reads less its guard (unless an operand names it too)."""
        if self.guard and self.guard not in _named(" ".join(self.ins.operands)):
            return self.reads - {self.guard}
        return self.reads


def _step(ins: Instr, section: str) -> _Step:
    cond = ins.pred.lstrip("@") if ins.pred not in ("", "@PT", "@UPT") else None
    guard = _pred(cond) if cond and _pred(cond) not in ("PT", "UPT") else None
    # (`PR` / `UPR` operands: the whole predicate file, read and maybe written, never surely)
    unexplained = frozenset(ins.unexplained()) | ins.predicate_file()
    offs = [int(o, 16) for o in _CONST.findall(ins.text)]
    # (a call's writes in the table are what the callee may clobber: its own instructions write
    # them, on the path the graph follows into it; the call itself overwrites nothing)
    return _Step(ins, section, cond, guard, ins.reads | unexplained, ins.writes | unexplained,
                 frozenset() if ins.base == "CALL" else ins.writes,
                 ins.base in ("LDC", "ULDC") and any(o in PARAM_ADDRESS for o in offs))


def _graph(steps: list[_Step], listings: dict[str, Listing]) -> tuple[list[list[int]], str]:
    """Successors of each instruction over every function of the cubin, or why the graph cannot be
    completed: a branch to a computed address, or to a label nothing defines. Every return goes
    to every place after a call through one join node, index len(steps) (its successors the last
    list; `check` adds its step, which changes nothing): returns x calls edges made the graph and
    its fixpoints quadratic (5,400 calls and returns, 10,805 words: 17.6 s and 240 MB; review 40)."""
    first: dict[str, int] = {}          # function -> index of its first instruction
    labels: dict[str, dict[str, int]] = {}
    k = 0
    for name, lst in listings.items():
        first[name] = k
        labels[name] = {lab: k + off // disasm.WORD for lab, off in lst.labels.items()}
        k += len(lst.instrs)
    after_calls = [k + 1 for k, s in enumerate(steps)
                   if s.base == "CALL" and k + 1 < len(steps) and steps[k + 1].section == s.section]
    join = len(steps)   # (the returns' join node)
    succ: list[list[int]] = []
    for k, s in enumerate(steps):
        nxt = [k + 1] if k + 1 < len(steps) and steps[k + 1].section == s.section else []
        if s.ins.computed_target():   # the graph would be incomplete
            return [], f"`{s.text}` branches to a computed address: the machine-code check cannot follow it"
        if s.base in ("BRA", "CALL"):
            t = _TARGET.search(s.text)
            to = t and (labels[s.section].get(t.group(1), first.get(t.group(1))))
            if to is None:
                return [], f"`{s.text}` branches to a place the machine-code check cannot find"
            # Only a bare, unguarded BRA always jumps: BRA.DIV jumps only when the warp is diverged
            # and falls through otherwise (the fourteenth review), so any modifier keeps the edge.
            out = [to] + (nxt if s.cond or s.base == "CALL" or s.ins.opcode != "BRA" else [])
        elif s.base == "EXIT":
            out = nxt if s.cond else []
        elif s.base == "RET":
            out = ([join] if after_calls else []) + (nxt if s.cond else [])
        else:
            out = nxt
        succ.append(out)
    if after_calls:
        succ.append(after_calls)
    return succ, ""


def _join_step(section: str) -> _Step:
    """The returns' join node: it reads, writes and loads nothing (both analyses pass its facts on
    unchanged), and `section` is the last instruction's, so it is no function's start."""
    ins = Instr(index=-1, offset=-1, text="(the returns' join)", pred="", opcode="NOP", operands=[],
                word=bytes(disasm.WORD))
    return _Step(ins, section, None, None, frozenset(), frozenset(), frozenset(), False)


def _pred(cond: str | None) -> str | None:
    return cond.lstrip("!") if cond else None


def _holding(facts: frozenset) -> set[str]:
    """The registers that may hold the address, on whatever terms: a use under the opposite guard
    sees them too, since a lane may read another lane's registers (SHFL, MMA, R2UR, ...) and which
    opcodes do is not in the table."""
    return {r for r, _ in facts}


def _transfer(s: _Step, facts: frozenset) -> frozenset:
    """Facts are (register, condition): the register may hold the address, if the guard literal
    `condition` held when it was written (None: on any terms). An unconditional write clears every
    fact on what it writes; a guarded one only those taken under its own guard (where the guard
    holds, the write replaced them; where it does not, they never held); writing a predicate drops
    the condition from the facts that rest on it."""
    taint = s.loads or bool(s.reads & _holding(facts))
    out = {(r, c) for r, c in facts if r not in s.kills or (s.cond is not None and c != s.cond)}
    if taint:
        out |= {(r, s.cond) for r in s.may}
    if preds := {r for r in s.may if "P" in r}:
        out = {(r, None if _pred(c) in preds else c) for r, c in out}
    return frozenset(out)


def _bare(s: _Step) -> set[str]:
    """The registers a TMA instruction reads outside its brackets: those it names there, and any
    the table marks that it does not name, when the nearest register named below it (its operand's
    first) is one of those or there is none."""
    inside: set[str] = set()
    outside: set[str] = set()
    for op in s.ins.operands:
        for m in _BRACKET.finditer(op):
            inside |= _named(m.group())
        outside |= _named(_BRACKET.sub(" ", op))
    named = inside | outside
    for r in s.sources() - named:
        kind, n = _TRACKED.fullmatch(r).groups()
        below = [int(m.group(2)) for x in named if (m := _TRACKED.fullmatch(x)) and m.group(1) == kind
                 and int(m.group(2)) < int(n)]
        if not below or f"{kind}{max(below)}" in outside:
            outside.add(r)
    return outside


_GPR = re.compile(r"(?<![\w.])([-~]?)(U?R\d+)(?![\w])")


def _moves(s: _Step) -> bool:
    """A move or a constant offset, not arithmetic on the value: its sources (the operands after
    the first) spell one register at most, plainly (no `-`/`~`), and an `IMAD` multiplies by a
    zero register. `UIADD3 UR4, UR4, UR4, URZ` doubles the address (every source holds it, yet
    23 of them shift its bits into a TMA coordinate: the fifteenth review); `IMAD R2, R3, 0x2, RZ`
    scales it."""
    sources = s.ins.operands[1:]
    regs = [m for op in sources for m in _GPR.finditer(op)]
    if len(regs) > 1 or any(m.group(1) for m in regs):
        return False
    return s.base != "IMAD" or any(op in ("RZ", "URZ") for op in sources[:2])


def _use_allowed(s: _Step, tainted: set[str]) -> bool:
    if s.guard in tainted:
        return False
    if s.base in _PROPAGATE:   # moved or offset by constants only: every register source holds it
        return s.sources() <= tainted and "c[" not in s.text and _moves(s)
    if s.base in _TMA:
        return not (_bare(s) & tainted)
    return False


def _descriptor_bracket(s: _Step) -> str:
    """A TMA instruction's descriptor operand: its last bracket (the only one of `UTMACCTL`/`UTMAPF`,
    the second of a load, store or reduction); '' when it has none."""
    brackets = [b for op in s.ins.operands if not op.startswith("desc[") for b in _BRACKET.findall(op)]
    return brackets[-1] if brackets else ""


def _descriptor(s: _Step) -> set[str]:
    """The registers naming a TMA instruction's descriptor, each with the other half of its 64-bit
    pair."""
    regs = {m.group() for m in re.finditer(r"U?R\d+", _descriptor_bracket(s))}
    return regs | {re.sub(r"\d+$", lambda m: str(int(m.group()) + 1), r) for r in regs}


def _neg(literal: str) -> str:
    return literal[1:] if literal.startswith("!") else "!" + literal


# What may take lanes out of a warp (a divergent branch, an exit, a call): a vote taken before it
# says nothing about the lanes after it.
_LANES = ("BRA", "EXIT", "RET", "CALL", "BREAK", "KILL", "WARPSYNC", "BSYNC")


def _offset(s: _Step, src: int | None) -> int | None:
    """What a move or constant offset (`_moves`) makes of a source holding the address plus `src`:
    plus the immediates it adds (none for a move, `IMAD`'s addend for a multiply-add by zero);
    unknown (None) for an unknown source. A carry-in add (`.X`, the high word's) counts its
    immediates and not the carry: the high word must come out at 0, and a low word off by a carry
    is a misaligned descriptor, which the tensor-memory unit refuses."""
    if src is None:
        return None
    ops = s.ins.operands[3:4] if s.base == "IMAD" else s.ins.operands[1:]
    return src + sum(int(op, 16) for op in ops if re.fullmatch(r"-?0x[0-9a-f]+", op))


def _gprs(regs) -> set[str]:
    """The vector and uniform registers among `regs`, less the predicates."""
    return {r for r in regs if "P" not in r}


def _surely_transfer(s: _Step, facts: frozenset) -> frozenset:
    """Facts on what holds the address plus a constant on every path (a must-analysis):
    ("r", register, condition, offset): it does wherever `condition` (a guard literal; None: always)
    held when it was written, the condition's predicate unwritten since, the constant being
    `offset` (None: not known); for a uniform register written by a guarded `R2UR`, wherever some
    active lane had it. ("v", UPk, kind, literal): UPk is the `VOTEU.ALL`/`.ANY` of `literal` over
    the warp's lanes, neither rewritten since nor a lane lost.
    An unguarded load of the address, or a move or constant offset (`_moves`) of registers that
    hold it (all on one condition at most), makes what it writes hold it under its guard and that
    condition; any other write (a call's clobbers included) unmakes it, except where a guarded one
    leaves a fact taken under the opposite guard (not of a uniform register under a lane guard:
    that is the warp's one value, which any lane under the guard replaces)."""
    regs = {(f[1], f[2], f[3]) for f in facts if f[0] == "r"}
    votes = {f for f in facts if f[0] == "v"}
    c = s.cond
    gen: str | None | bool = False   # False: nothing made; else the condition of what it makes
    off: int | None = None           # the constant of what it makes
    if s.loads:
        gen, off = c, 0
    elif (s.base in _PROPAGATE and "c[" not in s.text and _moves(s) and s.sources()
          and (s.base != "IMAD" or _gprs(s.sources()) <= _named(" ".join(s.ins.operands[3:4])))):
        # (an IMAD by zero carries the value only as its addend: `IMAD R2, R3, RZ, 0x40` is 0x40)
        conds = [{x for r2, x, _ in regs if r2 == r} for r in s.sources()]
        if all(conds):
            lits = set.intersection(*[cs for cs in conds if None not in cs] or [{None}])
            d = None if all(None in cs for cs in conds) else (min(lits, key=str) if lits else False)
            gen = False if d is False else (d if c is None else c if d in (None, c) else False)
            # (one register source, `_moves`; a carry predicate it reads holds no constant of its own)
            srcs = {o for r2, _, o in regs if r2 in _gprs(s.sources())}
            off = _offset(s, srcs.pop()) if len(srcs) == 1 else None
    out = set()
    for r, x, o in regs:
        lane_guarded_uniform = c is not None and r.startswith("U") and not c.lstrip("!").startswith("U")
        if r not in s.may:
            out.add((r, x, o))
        elif c is not None and s.base != "CALL" and (
                (x == _neg(c) and not lane_guarded_uniform) or (x is None and gen is not False)):
            # where the guard fails the old value stays; but a uniform register written under a
            # lane predicate is the warp's one value, replaced if any lane had the guard. An old
            # fact with another constant holds only where the guard fails (review 54: kept as
            # always, `@P0 UIADD3 UR4, UR4, 0x80` left UR4's constant read as 0 on every path)
            if x is not None or o == off:
                out.add((r, x, o))
            elif not lane_guarded_uniform:
                out.add((r, _neg(c), o))
    if gen is not False:
        out |= {(w, gen, off) for w in s.may}
    if preds := {w for w in s.may if "P" in w}:
        out = {(r, x, o) for r, x, o in out if x is None or _pred(x) not in preds}
        votes = {v for v in votes if v[1] not in preds and _pred(v[3]) not in preds}
    if s.base in _LANES and ".U" not in s.ins.opcode and not (s.base == "BRA" and s.cond is None):
        votes = set()
    if s.base == "VOTEU" and c is None and len(ops := s.ins.operands) == 2 and (
            kind := next((k for k in ("ALL", "ANY") if f".{k}" in s.ins.opcode), None)) and _pred(ops[1]) != ops[0]:
        votes.add(("v", ops[0], kind, ops[1]))
    return frozenset({("r", r, x, o) for r, x, o in out} | votes)


def _sure(reg: str, guard: str | None, facts: frozenset) -> set[int | None] | None:
    """The constants by which `reg` holds the address where an instruction under `guard` runs (on
    every path, or under the guard itself, or under a uniform predicate holding the same vote as
    the guard, or (a uniform register) under a lane predicate that the guard's vote says some lane
    had): those of the facts that say so; None when none does."""
    votes = {f[1]: (f[2], f[3]) for f in facts if f[0] == "v"}

    def canon(lit: str):   # a uniform literal by the vote it holds, when one is known
        v = votes.get(_pred(lit))
        return (v[0], lit.startswith("!"), v[1]) if v else lit

    got: set[int | None] = set()
    for f in facts:
        if f[0] != "r" or f[1] != reg:
            continue
        x = f[2]
        if x is None or (guard and canon(x) == canon(guard)):
            got.add(f[3])
        elif guard and reg.startswith("UR") and isinstance(g := canon(guard), tuple):
            # !ALL(l): some lane had !l; ANY(l): some lane had l
            if (g[0], g[1]) == ("ALL", True) and x == _neg(g[2]) or (g[0], g[1]) == ("ANY", False) and x == g[2]:
                got.add(f[3])
    return got or None


# The two fixpoints' work per cubin, in facts carried through a step (review 77: nothing bounded
# the machine-code rules' time, which is outside the compiler's timeout). The shipped library's 66
# cubins take at most ~23,000 units (~20 a machine instruction); past the budget the cubin is
# refused (fail closed: what the check cannot finish following is not accepted).
FLOW_UNITS = 2_000_000
FLOW_UNITS_PER_STEP = 50


class _TooComplex(Exception):
    """A cubin whose dataflow the check cannot finish within its budget."""


def _spend(budget: list[int], facts: frozenset) -> None:
    budget[0] -= 1 + len(facts)
    if budget[0] < 0:
        raise _TooComplex


def _unsure_descriptors(steps: list[_Step], succ: list[list[int]],
                        tmaps: dict[str, frozenset[int]] | None, budget: list[int]) -> str:
    """The first TMA instruction whose descriptor is not, on every path, the parameter bank's
    generic address plus a constant (a must-analysis over the graph: the meet is the intersection,
    a function's first instruction starts from nothing); with `tmaps` (the offsets of each kernel's
    tensor-map parameters), also one whose constant is not known, or is not one of those offsets:
    the bytes of other arguments, laid out as a descriptor, are not one the harness made (review 53)."""
    held_in: list[frozenset | None] = [None] * len(steps)   # None: not reached yet (the top)
    for k, s in enumerate(steps):
        if k == 0 or steps[k - 1].section != s.section:
            held_in[k] = frozenset()
    work = [k for k in range(len(steps)) if held_in[k] is not None]
    while work:
        k = work.pop()
        _spend(budget, held_in[k])
        out = _surely_transfer(steps[k], held_in[k])
        for t in succ[k]:
            if t == 0 or steps[t - 1].section != steps[t].section:
                continue   # a function's start holds nothing, whoever calls it
            new = out if held_in[t] is None else held_in[t] & out
            if new != held_in[t]:
                held_in[t] = new
                work.append(t)
    for k, s in enumerate(steps):
        if s.base not in _TMA:
            continue
        facts = held_in[k] or frozenset()
        sure = {r: _sure(r, s.cond, facts) for r in _descriptor(s)}   # each register's constants
        if None in sure.values():
            return (f"`{s.text}` in {s.section} names a TMA descriptor that is not, on every path, one of the "
                    "harness's parameters (the parameter bank's generic address plus a constant)")
        if tmaps is not None and sure:
            base = _descriptor_base(s)
            if any(consts != {0} for r, consts in sure.items() if r != base):
                return (f"`{s.text}` in {s.section} names a TMA descriptor whose address's high word is not the "
                        "parameter bank's own (a constant was added to it)")
            offs = sure.get(base) or {None}
            if not offs <= tmaps.get(s.section, frozenset()):
                return (f"`{s.text}` in {s.section} names a TMA descriptor at the parameter bank's address plus "
                        f"{', '.join('an unknown constant' if o is None else hex(o) for o in sorted(offs, key=str))}, "
                        "where no tensor-map parameter of that kernel is")
    return ""


def _descriptor_base(s: _Step) -> str:
    """The register a TMA instruction names for its descriptor's address (the low word of the pair)."""
    return re.search(r"U?R\d+", _descriptor_bracket(s)).group()


def check(listings: dict[str, Listing], tmaps: dict[str, frozenset[int]] | None = None) -> list[str]:
    """What the disassembled cubin does with the parameter bank's generic address that it may not,
    and a TMA descriptor from anywhere else (with `tmaps`, from anywhere but a tensor-map parameter
    of the kernel: `constbank.Params.tensor_maps`)."""
    steps = [_step(ins, name) for name, lst in listings.items() for ins in lst.instrs]
    bad: dict[str, str] = {}
    for s in steps:
        if any(int(o, 16) in PARAM_ADDRESS for o in _CONST.findall(s.text)) and s.base not in ("ULDC", "LDC"):
            bad.setdefault("read", f"`{s.text}` in {s.section} reads the parameter bank's generic address (0x198) "
                                   "other than by a plain load into registers")
    if not any(s.loads for s in steps):
        if tma := next((s for s in steps if s.base in _TMA and _descriptor(s)), None):
            bad["descriptor"] = (f"`{tma.text}` in {tma.section} names a TMA descriptor, and nothing loads the "
                                 "parameter bank's address: it is not one of the harness's parameters")
        return list(bad.values())   # nothing ever holds the address: no graph to follow
    # (without its table a function's implicit operands, a quad's last three registers say, are
    # unseen: every real function marks something, if only the stack pointer's load)
    unmarked = [n for n, lst in listings.items() if any(i.named for i in lst.instrs)
                and not any(i.reads or i.writes for i in lst.instrs)]
    succ, problem = _graph(steps, listings)
    if unmarked:
        problem = f"nvdisasm listed no register life ranges for {', '.join(unmarked)}: the machine-code check cannot follow it"
    if problem:
        return list(bad.values()) + [problem]
    if len(succ) > len(steps):
        steps = steps + [_join_step(steps[-1].section)]
    budget = [max(FLOW_UNITS, FLOW_UNITS_PER_STEP * len(steps))]
    live_in: list[frozenset] = [frozenset()] * len(steps)
    work = list(range(len(steps)))
    try:
        while work:
            k = work.pop()
            _spend(budget, live_in[k])
            out = _transfer(steps[k], live_in[k])
            for t in succ[k]:
                if not out <= live_in[t]:
                    live_in[t] = live_in[t] | out
                    work.append(t)
        unsure = _unsure_descriptors(steps, succ, tmaps, budget)
    except _TooComplex:
        return list(bad.values()) + ["the machine code's flow of the parameter bank's address is more than the "
                                     "check can follow within its budget: a cubin it cannot finish checking is "
                                     "not accepted"]
    anywhere = set().union(*map(_holding, live_in))
    for k, s in enumerate(steps):
        tainted = s.reads & (anywhere if s.base in _CROSS_LANE else _holding(live_in[k]))
        if s.guard in _holding(live_in[k]):
            tainted |= {s.guard}
        if tainted and not _use_allowed(s, tainted):
            bad.setdefault("use", f"`{s.text}` in {s.section} uses {', '.join(sorted(tainted))}, which may hold the "
                                  "parameter bank's generic address or a value computed from it: it may only be "
                                  "moved, offset by constants and given to a TMA instruction")
            break
    if unsure:
        bad["descriptor"] = unsure
    return list(bad.values())


def violations(data: bytes) -> list[str]:
    """`check` on the cubin's disassembly; a cubin that cannot be disassembled, or whose listing
    disagrees with its bytes, is refused."""
    try:
        listings = disasm.disassemble(data)
    except disasm.UNREADABLE as e:
        return [f"the machine code's register use could not be read ({str(e).splitlines()[0][:300]})"]
    return check(listings)
