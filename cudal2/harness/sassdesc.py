"""Where each global memory access's descriptor comes from, in a v2 cubin's machine code.

On sm_90 every global memory instruction names a memory descriptor, `desc[URx]`: the 64-bit
uniform register pair URx:URx+1. The driver's descriptor sits at c[0x0][0x208] (honest code
loads it with `ULDC.64 URx, c[0x0][0x208]`); a `.L2::cache_hint` access takes its policy word
from PTX as the descriptor (ptxas moves it in unchanged). A hand-made word changes how L2 treats
the lines (bad/zz31: a word whose low half createpolicy never sets; the judge's L2 flush could
be defeated), and the PTX rules that ask for a createpolicy word (`cubin._policy_uses`) were got
past five times by spellings. This is a second layer that reads what ptxas emitted instead.

Guarantees: `check(listings)` (and `violations(data)`, which disassembles first) refuses, one
line naming the instruction, every instruction with a `desc[URx]` operand (LDG, STG, LD, ST,
ATOM, RED, LDGSTS, UBLKPF, ...: whatever nvdisasm prints it for; HGMMA's `gdesc[]` is a shared
memory matrix descriptor, not this) unless, on every path from its function's entry to it
(a forward may-analysis over the function's control-flow graph, to a fixpoint), URx and URx+1
hold either
  (a) the low and high words of c[0x0][0x208], loaded by `ULDC`/`LDC` (.64 or one word at a
      time) and moved by plain copies (UMOV, MOV, IMAD.MOV.U32/IMAD.U32 with a zero product,
      R2UR, SEL/USEL of two such values), or
  (b) a 64-bit word whose every possible value is one that createpolicy.fractional or
      createpolicy.range makes (`POLICY_TEMPLATES`, measured on nvcc 13.0 / sm_90a: ptxas
      computes these words at run time with UMOV/USHF/ULOP3/UIADD3 chains that mask the
      fraction and range fields into place, so the analysis follows values as known bits).
Each 32-bit register holds one of: unknown, the driver word's low or high half, or a set of
known bits (a constant is all bits known). A guarded write joins the old and the new value (on
the path where the guard is false nothing is written; uniform guards too); a register nothing
wrote on some path is unknown; a value read from memory, from any other constant, or computed
by any instruction not modelled below is unknown; arithmetic on a driver word is unknown. At a
join of paths the values meet (two halves must agree, known bits must agree). A call kills every
register the callee (and what it calls) may write, and the callee is analysed from what holds at
every call (their meet). The check fails closed: an indirect branch or call, a branch to a place
it cannot find, a function with register names but no life-range table, or a cubin nvdisasm
cannot list, is refused.

Does not:
- model divergence: a uniform register is one per warp, and when lanes of a warp take different
  paths the hardware runs the paths one after the other, so a uniform register's value on one
  lane's path could in principle come from another path's writes. The analysis trusts ptxas,
  which allocates uniform registers for exactly that execution, not to let a write on one path
  clobber a value another path still reads (honest code depends on the same);
- correlate the two halves of a pair beyond their own sets: a pair whose halves each come from
  a createpolicy word but from different ones is judged by the templates' union of fields (the
  encodings share their layout), never passed for a mix of a driver half and a policy half;
- say anything about what the allowed policies do to L2 (evict_last can still keep lines);
- pin the fields inside a template: the range template takes an exponent field (bits 23..20) of
  14 or 15, which createpolicy.range never makes (ptxas clamps it to 13; review 34). Pinning it
  would need value ranges through the F2I/VIADDMNMX chains of run-time sizes; such a word still
  needs a way past the PTX rule's createpolicy-only definitions first;
- see through spills: a descriptor kept in local memory and loaded back is unknown (refused);
- accept a descriptor that shares a register pair with something else: with a cache_hint policy
  and a uniform shared address, ptxas writes `LDGSTS.E.BYPASS.128 [UR6+0x200], desc[UR7][R2.64]`
  (the table reads UR6 and UR7 only: UR6 holds the address; ptxas moves the address over the
  policy's low word), which is refused whatever the registers hold (review 34: it was refused only
  because UR7 held a policy's high word where a low word of 0 was asked), since whether the
  hardware reads UR7 alone, UR6:UR7 or UR7:UR8 is not measured here; no honest cubin of the survey
  has it;
- judge anything but the pair named in `desc[...]`: a TMA instruction's descriptor address and
  other operands are `paramflow`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cudal2.sass import disasm
from cudal2.sass.disasm import Instr, Listing

DRIVER_DESC = 0x208
# The fixpoint's budget in register-facts handled (a step costs its state's size; ~1 us each on
# a 2-core CPU). The lattice is finite, but its height is registers x known bits: a loop that
# shifts unknown bits one place a pass through 60 uniform registers, with 200 registers holding
# constants beside them, took 178,600 steps of ~250 facts (44 million, 37 s) in 444 nodes before the
# step budget refused it, and with 2,000 more nodes it ran 62 s to its fixpoint; 16,384 words
# allow tens of minutes (review 40). The most any honest cubin measured needed: 160,195 (of 454:
# the shipped library's and 400 cached survey builds); past EFFORT the cubin is refused.
EFFORT = 8_000_000
_M32 = 0xFFFFFFFF

# --- the abstract values --------------------------------------------------------------------
# None: unknown. ("d", 0) / ("d", 1): the low / high word of c[0x0][0x208]. ("k", known, value):
# the bits in `known` are `value`'s (value has no bits outside known); a constant knows all 32.
TOP = None
DLO, DHI = ("d", 0), ("d", 1)


def const(v: int) -> tuple:
    return ("k", _M32, v & _M32)


def join(a, b):
    if a == b:
        return a
    if a is None or b is None or a[0] != "k" or b[0] != "k":
        return TOP
    known = a[1] & b[1] & ~(a[2] ^ b[2]) & _M32
    return ("k", known, a[2] & known) if known else TOP


def _bits(v) -> tuple[int, int]:
    """(known, value) of a value; unknown and the driver's halves know no bits."""
    return (v[1], v[2]) if v is not None and v[0] == "k" else (0, 0)


def _lop3(lut: int, a, b, c):
    """Known bits of LOP3 (a, b, c) with lookup table `lut`: a bit is known when every completion
    of its unknown inputs gives the same output."""
    (ka, va), (kb, vb), (kc, vc) = _bits(a), _bits(b), _bits(c)
    known = value = 0
    for i in range(32):
        outs = set()
        for x in ((va >> i & 1,) if ka >> i & 1 else (0, 1)):
            for y in ((vb >> i & 1,) if kb >> i & 1 else (0, 1)):
                for z in ((vc >> i & 1,) if kc >> i & 1 else (0, 1)):
                    outs.add(lut >> (x << 2 | y << 1 | z) & 1)
        if len(outs) == 1:
            known |= 1 << i
            value |= outs.pop() << i
    return ("k", known, value) if known else TOP


def _shift(v, n: int, left: bool):
    """A logical shift of a value by a constant: the bits shifted in are known zeros."""
    k, x = _bits(v)
    if left:
        fill = (1 << n) - 1
        return ("k", (k << n | fill) & _M32, (x << n) & _M32)
    return ("k", (k >> n | (_M32 << (32 - n))) & _M32 if n else k, x >> n)


# --- what createpolicy makes (nvcc 13.0, sm_90a; measured, see tests/test_sass_desc.py) --------
# The low word is 0. The high word: bits 31-28 = 0b0001; bit 27 = range (1) or fractional (0);
# bits 26-25 = the primary priority (0 evict_unchanged, 1 evict_first, 2 evict_last, 3
# evict_normal); bit 24 = the secondary (1 evict_first, 0 evict_unchanged); then, fractional:
# bits 23-20 the fraction (0..15, from the operand), bits 19-0 zero; range: bits 23-20, 18-12 and
# 11-5 fields of the base and sizes (from the operands), bits 19 and 4-0 zero. Every one of the
# 16 codes in bits 27-24 is a createpolicy result, so they are free; what is fixed is the marker
# and the zero fields. (CuTe's three named words, 0x10.., 0x12F.., 0x14F.., are fractional ones.)
# A template: (high word's fixed-bit mask, their value, low word's mask, value).
POLICY_TEMPLATES: tuple[tuple[int, int, int, int], ...] = (
    (0xF80FFFFF, 0x10000000, _M32, 0),   # createpolicy.fractional
    (0xF808001F, 0x18000000, _M32, 0),   # createpolicy.range
)


def _is_policy(hi, lo) -> bool:
    (kh, vh), (kl, vl) = _bits(hi), _bits(lo)
    return any((kh & mh) == mh and (vh & mh) == fh and (kl & ml) == ml and (vl & ml) == fl
               for mh, fh, ml, fl in POLICY_TEMPLATES)


# --- reading instructions ----------------------------------------------------------------------
_DESC = re.compile(r"(?<![\w.])desc\[(UR)(\d+)\]")
_REGISTER = re.compile(r"(U?R)(\d+)|(U?RZ)")
_IMM = re.compile(r"-?0x[0-9a-f]+|-?\d+")
_CONST0 = re.compile(r"c\[0x0\]\[(0x[0-9a-f]+)\]")
_TARGET = re.compile(r"`\(([^)]+)\)")


def _plain(op: str) -> str:
    return op[:-6] if op.endswith(".reuse") else op


def _is_dest_pred(op: str) -> bool:
    return re.fullmatch(r"U?P[0-6T]", op) is not None


def _value(op: str, regs: dict):
    """The abstract value of a source operand: a register (its value), a zero register, an
    integer immediate; anything else (negated, absolute, a constant bank, a float) unknown."""
    op = _plain(op)
    if op in ("RZ", "URZ"):
        return const(0)
    if m := re.fullmatch(r"(U?R)(\d+)", op):
        return regs.get(op)
    if re.fullmatch(r"0x[0-9a-f]+", op):
        return const(int(op, 16))
    if re.fullmatch(r"-0x[0-9a-f]+", op):
        return const(-int(op[1:], 16))
    if m := _CONST0.fullmatch(op):
        return {DRIVER_DESC: DLO, DRIVER_DESC + 4: DHI}.get(int(m.group(1), 16))
    return TOP


def _pair(reg: str) -> str:
    m = re.fullmatch(r"(U?R)(\d+)", reg)
    return f"{m.group(1)}{int(m.group(2)) + 1}"


def _model(ins: Instr, regs: dict) -> dict:
    """What the instruction writes, for the opcodes whose result is followed: register -> value.
    Registers it writes and that are not here become unknown."""
    base, ops = ins.base, [_plain(o) for o in ins.operands]
    mods = ins.opcode.split(".")[1:]
    while ops and _is_dest_pred(ops[0]) and len(ops) > 1 and re.fullmatch(r"U?R\d+", ops[1]):
        ops = ops[1:]   # (`R2UR P1, UR4, R4`: a predicate written beside the register)
    if not ops or not re.fullmatch(r"U?R\d+", ops[0]):
        return {}
    dst, src = ops[0], ops[1:]
    if base in ("ULDC", "LDC") and len(src) == 1 and (m := _CONST0.fullmatch(src[0])):
        off = int(m.group(1), 16)
        if "64" in mods:
            return {dst: {DRIVER_DESC: DLO}.get(off), _pair(dst): {DRIVER_DESC: DHI}.get(off)}
        if not mods:
            return {dst: _value(src[0], regs)}
        return {}
    if base in ("UMOV", "MOV", "R2UR") and not mods and len(src) == 1:
        return {dst: _value(src[0], regs)}
    if base == "MOV" and len(src) == 2 and src[1] == "0xf":   # MOV Rd, Rs, 0xf: the lane mask form
        return {dst: _value(src[0], regs)}
    if base == "IMAD" and mods in (["MOV", "U32"], ["U32"], ["MOV"]) and len(src) == 3 and src[:2] == ["RZ", "RZ"]:
        return {dst: _value(src[2], regs)}
    if base == "CS2R" and src == ["SRZ"]:
        return {dst: const(0), **({_pair(dst): const(0)} if "32" not in mods else {})}
    if base == "HFMA2" and mods == ["MMA"] and src == ["-RZ", "RZ", "0", "0"]:
        return {dst: const(0)}
    if base in ("USEL", "SEL") and len(src) == 3:
        return {dst: join(_value(src[0], regs), _value(src[1], regs))}
    if base in ("ULOP3", "LOP3") and mods[:1] == ["LUT"] and len(src) == 5 and re.fullmatch(r"0x[0-9a-f]+", src[3]):
        if src[4] not in ("!PT", "!UPT"):
            return {}
        return {dst: _lop3(int(src[3], 16), *(_value(s, regs) for s in src[:3]))}
    if base in ("USHF", "SHF") and len(src) == 3 and re.fullmatch(r"0x[0-9a-f]+", src[1]):
        n = int(src[1], 16)
        if n >= 32:
            return {}
        if mods == ["L", "U32"] and src[2] in ("RZ", "URZ"):
            return {dst: _shift(_value(src[0], regs), n, left=True)}
        if mods == ["R", "U32"] and src[2] in ("RZ", "URZ"):
            return {dst: _shift(_value(src[0], regs), n, left=False)}
        if mods == ["R", "U32", "HI"] and src[0] in ("RZ", "URZ"):
            return {dst: _shift(_value(src[2], regs), n, left=False)}
        return {}
    if base in ("UIADD3", "IADD3") and not mods and len(src) == 3:
        vals = [_value(s, regs) for s in src]
        if all(v is not None and v[0] == "k" and v[1] == _M32 for v in vals):
            return {dst: const(sum(v[2] for v in vals))}
        return {}
    return {}


@dataclass
class _Fn:
    """One function's instructions as nvdisasm listed them (a section), with block structure."""
    name: str
    instrs: list[Instr]
    labels: dict[str, int]      # label -> instruction index


def _guard_never(ins: Instr) -> bool:
    return ins.pred in ("@!PT", "@!UPT")


def _literal(ins: Instr) -> str | None:
    """The guard literal ("P0", "!UP1"); None when the instruction always runs."""
    return None if ins.pred in ("", "@PT", "@UPT") else ins.pred[1:]


def _successors(fn: _Fn, k: int, entries: dict[str, tuple[str, int]]) -> tuple[list[int], tuple | None, str]:
    """(successors in the function, a called function's (section, index) or None, problem)."""
    ins = fn.instrs[k]
    nxt = [k + 1] if k + 1 < len(fn.instrs) else []
    if _guard_never(ins):
        return nxt, None, ""
    if ins.computed_target():
        return [], None, f"`{ins.text}` in {fn.name} branches to a computed address"
    if ins.base in ("BRA", "CALL"):
        t = _TARGET.search(ins.text)
        if not t:
            return [], None, f"`{ins.text}` in {fn.name} branches to a register or a place the check cannot find"
        if ins.base == "CALL":
            callee = entries.get(t.group(1))
            if callee is None and t.group(1) in fn.labels:
                callee = (fn.name, fn.labels[t.group(1)])
            if callee is None:
                return [], None, f"`{ins.text}` in {fn.name} calls a place the check cannot find"
            return nxt, callee, ""
        to = fn.labels.get(t.group(1))
        if to is None:
            return [], None, f"`{ins.text}` in {fn.name} branches to a place the check cannot find"
        # only a bare, unguarded BRA always jumps (BRA.DIV, BRA.U.ANY may fall through)
        return [to] + (nxt if _literal(ins) or ins.opcode != "BRA" else []), None, ""
    if ins.base in ("EXIT", "RET", "KILL"):
        return (nxt if _literal(ins) else []), None, ""
    return nxt, None, ""


def _writes(ins: Instr) -> frozenset[str]:
    """What the instruction may write: the life-range table's writes, every register the text
    names that the table does not mark (taken as maybe written), and the whole predicate file
    where an operand is `PR`/`UPR` (the table marks none of it)."""
    return frozenset(ins.writes | ins.unexplained() | ins.predicate_file())


# The state at an instruction: register -> (u, lit, c): the register holds a value of `u` on
# every path (None: unknown), and, where the guard literal `lit` holds (its predicate unwritten
# since it was taken), a value of `c`. ptxas writes a descriptor under a guard and uses it under
# the same guard (`@!P0 R2UR UR6, R20; ... @!P0 STG.E desc[UR6]...`: 1 of the 133 honest cubins
# of the survey, an sm90raw epilogue); a lane that runs the use had the literal at the write,
# so the write ran and wrote its value. A register absent from the state is unknown.
def _norm(u, lit, c):
    if lit is None or c is None or join(c, u) == c:   # the condition says nothing more
        return None if u is None else (u, None, None)
    return (u, lit, c)


def _join_facts(a, b):
    (ua, la, ca), (ub, lb, cb) = a or (None, None, None), b or (None, None, None)
    u = join(ua, ub)
    if la is not None and la == lb:
        return _norm(u, la, join(ca, cb))
    if la is not None and lb is None:
        return _norm(u, la, join(ca, ub))
    if lb is not None and la is None:
        return _norm(u, lb, join(cb, ua))
    return _norm(u, None, None)


def _view(state: dict, lit: str | None) -> dict:
    """Register values as an instruction under `lit` reads them."""
    out = {}
    for r, (u, l2, c) in state.items():
        v = c if lit is not None and l2 == lit else u
        if v is not None:
            out[r] = v
    return out


def _neg(lit: str) -> str:
    return lit[1:] if lit.startswith("!") else "!" + lit


def _transfer(ins: Instr, state: dict, clobbered: frozenset[str] | None) -> dict:
    if _guard_never(ins):
        return state
    if clobbered is not None:
        # A call: what the callee (and what it calls) may write is unknown after it, and every
        # guard condition is dropped. The table's row for the CALL lists the ABI's caller-saved
        # registers (UR4-UR15 say), not what the callee writes; the callee's code is in the cubin
        # and read here, so its own writes are the ones that count (the call writes no register).
        return {r: f for r, (u, _, _) in state.items() if r not in clobbered and (f := _norm(u, None, None))}
    writes = _writes(ins)
    if not writes:
        return state
    lit = _literal(ins)
    made = _model(ins, _view(state, lit))
    out = dict(state)
    for r in writes:
        if r.startswith(("P", "UP")):
            out.pop(r, None)
            continue
        v = made.get(r)
        if lit is None:
            f = _norm(v, None, None)
        else:   # where the guard fails the old value stays; where it holds, the new one
            u, l2, c = state.get(r) or (None, None, None)
            f = _norm(join(v, c if l2 == _neg(lit) else u), lit, v)
        if f is None:
            out.pop(r, None)
        else:
            out[r] = f
    if preds := {w for w in writes if w.startswith(("P", "UP"))}:
        out = {r: f for r, (u, l2, c) in out.items()
               if (f := (u, l2, c) if l2 is None or l2.lstrip("!") not in preds else _norm(u, None, None))}
    return out


def _clobbers(fns: dict[str, _Fn], nodes: list, succ: dict, calls: dict) -> dict[tuple[str, int], frozenset[str]]:
    """callee -> every register an instruction reachable from it (through branches and calls) may
    write. One backward fixpoint over all the nodes, each register a bit of an int (a node's set
    only grows, so it changes at most once per register), not a search per callee: a chain of 900
    calls made that 900 searches of ~7,500 nodes each, 73 s of the build thread (review 40)."""
    if not calls:
        return {}
    bit: dict[str, int] = {}
    reach: dict[tuple[str, int], int] = {}
    for n in nodes:
        m = 0
        for r in _writes(fns[n[0]].instrs[n[1]]):
            m |= 1 << bit.setdefault(r, len(bit))
        reach[n] = m
    out = {n: succ[n] + ([calls[n]] if n in calls else []) for n in nodes}
    preds: dict[tuple[str, int], list] = {n: [] for n in nodes}
    for n in nodes:
        for t in out[n]:
            preds[t].append(n)
    work = list(nodes)   # popped last first: the forward edges settle in one backward sweep
    while work:
        n = work.pop()
        m = reach[n]
        for t in out[n]:
            m |= reach[t]
        if m != reach[n]:
            reach[n] = m
            work.extend(preds[n])
    names = list(bit)
    return {c: frozenset(names[i] for i in range(len(names)) if reach[c] >> i & 1) for c in set(calls.values())}


def check(listings: dict[str, Listing]) -> list[str]:
    """One line per refused descriptor use (at most five), or why the cubin cannot be checked."""
    fns = {name: _Fn(name, lst.instrs, {lab: off // disasm.WORD for lab, off in lst.labels.items()})
           for name, lst in listings.items()}
    if not any(_DESC.search(i.text) for fn in fns.values() for i in fn.instrs):
        return []
    entries = {name: (name, 0) for name in fns}
    for name, fn in fns.items():
        if any(i.named for i in fn.instrs) and not any(i.reads or i.writes for i in fn.instrs):
            return [f"nvdisasm listed no register life ranges for {name}: the descriptor check cannot follow it"]
    nodes = [(name, k) for name, fn in fns.items() for k in range(len(fn.instrs))]
    succ: dict[tuple[str, int], list[tuple[str, int]]] = {}
    calls: dict[tuple[str, int], tuple[str, int]] = {}
    for name, k in nodes:
        out, callee, problem = _successors(fns[name], k, entries)
        if problem:
            return [problem + ": the descriptor check cannot follow it"]
        succ[(name, k)] = [(name, t) for t in out]
        if callee:
            calls[(name, k)] = callee
    # What a call may write: every register any instruction reachable from the callee's entry
    # writes (its own calls included, since their callees are reachable too).
    clobbers = _clobbers(fns, nodes, succ, calls)
    # Forward analysis to a fixpoint; None: not reached yet. A function's entry knows nothing,
    # whoever calls it (a subroutine inside a kernel's section starts from what its calls meet).
    state: dict[tuple[str, int], dict | None] = {n: None for n in nodes}
    for name in fns:
        state[(name, 0)] = {}

    def merge(t, facts: dict) -> bool:
        old = state[t]
        if old is None:
            state[t] = dict(facts)
            return True
        new = {r: j for r, f in old.items() if (j := _join_facts(f, facts.get(r)))}
        if new != old:
            state[t] = new
            return True
        return False
    work = [n for n in nodes if state[n] is not None]
    budget = 400 * len(nodes) + 1000
    effort = EFFORT
    while work:
        n = work.pop()
        facts = state[n]
        budget -= 1
        effort -= 1 + len(facts)   # a step copies and meets its state: its cost is the state's size
        if budget < 0 or effort < 0:
            return ["the descriptor analysis did not settle within its budget: the machine code cannot be checked"]
        after = _transfer(fns[n[0]].instrs[n[1]], facts, clobbers[calls[n]] if n in calls else None)
        for t in succ[n]:
            if merge(t, after):
                work.append(t)
        if n in calls and merge(calls[n], facts):
            work.append(calls[n])
    bad: list[str] = []
    for name, k in nodes:
        ins = fns[name].instrs[k]
        for m in _DESC.finditer(ins.text):
            if state[(name, k)] is None:
                continue   # never reached from any entry
            regs = _view(state[(name, k)], _literal(ins))
            n = int(m.group(2))
            lo, hi = f"UR{n}", f"UR{n + 1}"
            rest = ins.text[:m.start()] + ins.text[m.end():]
            if shared := [f"UR{r}" for r in (n - 1, n, n + 1) if re.search(rf"(?<![\w.])UR{r}(?!\d)", rest)]:
                # `LDGSTS [UR4], desc[UR5][R2.64]`: ptxas overwrites the policy's low word with the
                # address, so which registers the hardware takes as the descriptor is not known here;
                # any other operand naming the pair or the register below it is refused the same way
                bad.append(f"`{ins.text}` in {name} at {ins.offset:#06x}: its memory descriptor {lo}:{hi} shares "
                           f"registers with another operand ({', '.join(shared)}): the descriptor check cannot tell "
                           "which words the hardware reads")
                continue
            a, b = regs.get(lo), regs.get(hi)
            if (a, b) == (DLO, DHI) or _is_policy(b, a):
                continue
            bad.append(f"`{ins.text}` in {name} at {ins.offset:#06x}: its memory descriptor {lo}:{hi} is not, on "
                       f"every path, the driver's (c[0x0][0x208]) or a createpolicy word ({_show(a)}, {_show(b)})")
    return bad[:5]


def _show(v) -> str:
    if v is None:
        return "unknown"
    if v[0] == "d":
        return f"c[0x0][{DRIVER_DESC + 4 * v[1]:#x}]"
    return f"{v[2]:#010x}" if v[1] == _M32 else f"bits {v[2]:#010x}/{v[1]:#010x}"


def violations(data: bytes) -> list[str]:
    """`check` on the cubin's disassembly; a cubin that cannot be disassembled is refused."""
    try:
        listings = disasm.disassemble(data)
    except disasm.UNREADABLE as e:
        return [f"the memory descriptors could not be checked ({str(e).splitlines()[0][:300]})"]
    return check(listings)
