"""What a built v2 cubin holds, and the checks a device-only candidate's binary must pass.

Guarantees:
- `sections(data)` reads the ELF section headers of a cubin (no CUDA needed); `inspect(data)`
  returns its sections, entry kernels and unresolved symbols;
- `violations(info, kernels)` lists, one line each, what the contract forbids in the binary
  whatever the source looked like: writable module globals (`.nv.global*`: state that would
  survive from one call to the next), module `__constant__` data (`.nv.constant3`: a review
  wrote it through its bank's generic address, read from driver words by spellings no text rule
  caught, and kept state past its end; without a bank there is nothing to write), unresolved
  symbols (device malloc/free, printf, device-side launches: code the harness did not see), and
  spec kernels that are not entry points;
- `ptx_violations(ptx)` lists what the PTX may not do, before ptxas runs: a generic address of
  constant memory, any reach into the parameter bank beyond the parameters (a second layer
  behind the bank rule: the driver's words there are not the kernel's to read), and a cache_hint
  access whose policy word (the access's memory descriptor) createpolicy did not make;
- `canonical_ptx(text)` removes what nvcc makes path-dependent (the module id in internal names),
  so the same source, flags and toolkit give the same cubin bytes in any folder.

Does not: load or run the cubin.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field


class CubinError(ValueError):
    """Not a cubin this module can read."""


@dataclass
class CubinInfo:
    sections: list[str] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)
    undefined: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


def sections(data: bytes) -> list[Section]:
    """The section headers of a 64-bit little-endian ELF file, with their names."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise CubinError("not a 64-bit little-endian ELF file")
    try:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        names_off = heads[shstrndx][4]
        return [Section(i, _name_at(data, names_off, name), typ, flags, off, size, link, info, entsize)
                for i, (name, typ, flags, _, off, size, link, info, _, entsize) in enumerate(heads)]
    except (struct.error, IndexError, ValueError) as e:
        raise CubinError(f"malformed ELF: {e}") from None


def _name_at(data: bytes, base: int, off: int) -> str:
    return data[base + off:data.index(b"\0", base + off)].decode("latin-1")


def inspect(data: bytes) -> CubinInfo:
    secs = sections(data)
    info = CubinInfo(sections=[s.name for s in secs])
    info.entries = sorted(n[len(".nv.info."):] for n in info.sections if n.startswith(".nv.info."))
    try:
        for s in secs:
            if s.type != 2:  # SHT_SYMTAB
                continue
            sym_strs = secs[s.link].offset
            for j in range(s.size // (s.entsize or 24)):
                st_name, _, _, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", data, s.offset + j * 24)
                if st_shndx == 0 and st_name:
                    sym = _name_at(data, sym_strs, st_name)
                    if not sym.startswith(".nv.reserved"):  # ptxas's own shared-memory bookkeeping
                        info.undefined.append(sym)
    except (struct.error, IndexError, ValueError) as e:
        raise CubinError(f"malformed ELF: {e}") from None
    return info


def violations(info: CubinInfo, kernels: list[str]) -> list[str]:
    out = []
    if "__assertfail" in info.undefined:   # first: the module globals and unresolved symbols below follow from it
        out.append("assert() in device code: its failure handler and message strings are module state the "
                   "contract does not allow; remove it, or #define NDEBUG before the includes")
    state = sorted(s for s in info.sections if s.startswith(".nv.global"))
    if state:
        out.append(f"writable module globals ({', '.join(state)}): __device__/__managed__ variables keep state "
                   "across calls; use the workspace")
    if info.undefined:
        out.append(f"unresolved symbols {sorted(set(info.undefined))[:6]}: device malloc/free, printf and device-side "
                   "launches are not allowed")
    banks = sorted(s for s in info.sections if re.fullmatch(r"\.nv\.constant\d+", s))
    if banks:   # module memory: writable through the bank's generic address, and it outlives every call
        out.append(f"module __constant__ data ({', '.join(banks)}): its memory lives as long as the module and a "
                   "kernel can reach and write it, so it could carry state between calls; use constexpr values, "
                   "or compute the table in the kernel")
    relocated = sorted(s for s in info.sections if s.startswith((".rela.nv.constant", ".rel.nv.constant")))
    if relocated:   # an address stored in constant data: a way to reach module memory and write it
        out.append(f"relocated constant data ({', '.join(relocated)}): a pointer kept in __constant__ memory "
                   "reaches module memory that keeps state across calls")
    missing = [k for k in kernels if k not in info.entries]
    if missing:
        out.append(f"launch spec names kernels the cubin does not define as extern \"C\" __global__: {missing} "
                   f"(entries: {info.entries[:8]})")
    return out


_CONST_TO_GENERIC = re.compile(r"\bcvta\s*\.\s*const\b")
_GENERIC_INIT = re.compile(r"\bgeneric\s*\(")


def ptx_violations(ptx: str) -> list[str]:
    """What the canonical PTX may not do: take a generic address of `__constant__` data, by
    cvta.const or by an initializer (`= generic(sym)`, a pointer stored in module data), through
    which constant memory could be written and kept from one call to the next; or reach the
    launch's parameter bank outside its parameters, or a cache_hint policy word createpolicy did not
    make (`statement_violations`)."""
    out = []
    if _CONST_TO_GENERIC.search(ptx):
        out.append("a generic pointer to __constant__ memory (cvta.const): constant data is read-only and may not "
                   "carry state between calls")
    if _GENERIC_INIT.search(ptx):
        out.append("a generic address of module data in an initializer (generic(...)): a pointer stored in "
                   "__constant__ memory reaches module memory that keeps state between calls")
    if _FILE_DIRECTIVE.search(ptx):
        out.append("a .file directive (ptxas stat()s the file it names and writes its size and time into the cubin; "
                   "nvcc emits none without -lineinfo, so it came from inline asm; review 50)")
    return out + statement_violations(ptx)


_FILE_DIRECTIVE = re.compile(r"(?<![\w$])\.file\b")   # anywhere, comments and strings included (over-refusing)


# The parameter bank (constant bank 0) holds, below the parameters, driver-filled words such as
# the generic base of the module's constant bank (what cvta.const loads). With module constant
# data refused there is no bank behind that word, so this is a second layer: an address of the
# parameters may only read a parameter (ld.param within its bounds) or name a TMA descriptor, and
# no driver word is the kernel's to read.
_PARAM_DECL = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.([a-z]+)(\d*)(?:\s+\.(?:ptr|global|shared|const|local|align\s+\d+))*"
                         r"\s+([A-Za-z_$][\w$]*)(?:\[(\d+)\])?")
_TMA_OPS = ("cp.async.bulk.tensor", "cp.reduce.async.bulk.tensor", "prefetch.tensormap", "fence.proxy.tensormap")
TENSOR_MAP_BYTES = 128   # a CUtensorMap, as the harness passes a {"tmap"} argument
_ENVREG = re.compile(r"%envreg\d+")


def _param_sizes(ptx: str) -> dict[str, int]:
    """Bytes per .param name: a kernel parameter's from its .entry header alone (a larger
    declaration of its name in a nested scope must not widen the real one), any other name's the
    largest of its declarations (nvcc declares param0/retval0 once per call, in each call's size;
    those live in the call's frame, not in the launch's bank, which the machine-code rule guards)."""
    def decls(text: str):
        for kind, bits, name, count in _PARAM_DECL.findall(text):
            yield name, ((int(bits) // 8 if bits else 8) if kind != "pred" else 1) * (int(count) if count else 1)
    sizes: dict[str, int] = {}
    for name, n in decls(ptx):
        sizes[name] = max(n, sizes.get(name, n))
    heads: dict[str, int] = {}
    for head in re.findall(r"\.entry\s+[\w$]+\s*\((.*?)\)", ptx, flags=re.S):
        for name, n in decls(head):
            # nvcc names a parameter after its kernel, so only raw PTX declares one name in two
            # headers: the smaller size counts (the last one did, and an injected entry widened
            # the real kernel's parameter over its padding: review 53)
            heads[name] = min(n, heads.get(name, n))
    return {**sizes, **heads}


_LOC = re.compile(r"\.loc\s+\d+\s+\d+\s+\d+(?:\s*,\s*function_name\s+[\w$.]+\s*,\s*inlined_at\s+\d+\s+\d+\s+\d+)?")
_STRING_OR_COMMENT = re.compile(r'"[^"]*"|/\*.*?\*/|//[^\n]*', flags=re.S)   # (a string may span lines)


def statement_violations(ptx: str) -> list[str]:
    """The rules that read each function's statements: uses of a parameter's address other than
    `ld.param` inside that parameter, `cvta.param` of it, a TMA instruction naming it, or a plain
    copy of it; any other access to the parameter space (`ld`/`st` of `.param` through anything but
    a parameter's address, `cvta.to.param`); %envreg (driver words); and cache_hint policy words
    (`_policy_uses`). One line each, at most five."""
    # Strings and comments out in one left-to-right pass, as ptxas reads them: a `//` inside a
    # block comment must not eat its end, a `/*` inside a string (`.pragma "/*";`) opens none, and
    # a string ends at its next quote, newlines included (ptxas knows no escapes: `"x\"` is the
    # string `x\`; an escape-aware pattern, then one that stopped strings at a newline, each hid the
    # code up to the next string from every rule: the tenth and eleventh reviews).
    out: list[str] = []
    escapes: list[str] = []

    def blank(m: re.Match) -> str:
        if m.group(0)[0] != '"':
            return " "
        if "\\" in m.group(0):
            escapes.append(m.group(0))
        return '""'
    body = _STRING_OR_COMMENT.sub(blank, ptx)
    if escapes:
        out.append("a backslash inside a PTX string (ptxas reads it as a plain character; honest PTX has none)")
    # A `.loc` (what -lineinfo writes before instructions) ends without a `;`: read as part of the
    # next statement, it made that statement a directive, unchecked (twelfth review). It becomes a
    # statement boundary; any other line directive is refused.
    body = _LOC.sub(";", body)
    if re.search(r"\.loc\b|#", body):
        out.append("a line directive (`.loc`, `#line`) the parameter rule cannot read")
    sizes = _param_sizes(body)   # (from the code only: a declaration in a comment declares nothing)
    if _ENVREG.search(body):
        out.append("reads a driver register (%envreg): the launch's driver words are not the kernel's to read")
    # A register named like a parameter would make `[name]` a register-indexed read of the bank.
    regs = {n for st in body.split(";") for n in _reg_names(_GUARD.sub("", st.strip()))}
    if clash := sorted(regs & set(sizes)):
        out.append(f"registers named like parameters ({', '.join(clash[:4])}): `[name]` would read the parameter "
                   "bank through a register")
    entry = {n for head in re.findall(r"\.entry\s+[\w$]+\s*\((.*?)\)", body, flags=re.S)
             for n in re.findall(r"([A-Za-z_$][\w$]*)\s*(?:\[\d+\])?\s*(?:,|$)", head.strip())}
    # Per function: register names are reused from one function to the next. Bodies are found by
    # matching braces, not by the next `.func`: a declaration ptxas accepts inside a body
    # (`.extern .func x ();`) once ended the rule's view of a kernel there (ninth review).
    bodies, problem = _bodies(body)
    if problem:
        out.append(problem)
    for fn in bodies:
        stmts = _statements(fn)
        out += _unreadable(stmts) + _param_uses(stmts, sizes, entry) + _policy_uses(stmts, fn)
    return out[:5]


# A `.reg` declaration: ptxas takes `.reg.b64 x` and `.reg .b64 %r< 9 >` too; a pattern that asked
# for a space after `.reg` left `.reg.b64 pol` undeclared to the path rule, which then took an
# inner, never-written `pol` for the outer one a createpolicy wrote (review 32).
_REG_DECL = re.compile(r"\.reg\b(?:\s*\.\w+)+\s+([^;{}]+)")


def _reg_names(statement: str) -> list[str]:
    """The names (`x` or a range `%r<9>`) a `.reg` statement declares; [] for any other statement."""
    m = _REG_DECL.fullmatch(statement.strip())
    return [n.strip() for n in m.group(1).split(",")] if m else []


# A directive opening a statement (an instruction's `.global` is a state space, not one of these).
_DECL_IN_BODY = re.compile(r"(?:^|[;{}:])\s*(\.(?:entry|func|extern|visible|weak))\b")


def _bodies(ptx: str) -> tuple[list[str], str]:
    """The text inside each top-level pair of braces but an initializer's (`= {37, 100, 0}`, which
    holds no statements): every function body; and what is wrong with the nesting or with a
    declaration inside a body: the rules read the whole module, so a text they cannot split is
    refused, not skipped."""
    bodies, depth, start, problem = [], 0, 0, ""
    for m in re.finditer(r"[{}]", ptx):
        if m.group(0) == "{":
            if depth == 0:
                start = m.end()
            depth += 1
        else:
            depth -= 1
            if depth < 0:
                return bodies, "unbalanced braces in the PTX: the parameter rule cannot find the functions"
            if depth == 0 and not ptx[:start - 1].rstrip().endswith("="):
                bodies.append(ptx[start:m.start()])
    if depth:
        return bodies, "unbalanced braces in the PTX: the parameter rule cannot find the functions"
    for b in bodies:
        if d := _DECL_IN_BODY.search(b):
            problem = f"a module-level declaration (`{d.group(1)}`) inside a function body"
            break
    return bodies, problem


_NAME = re.compile(r"%?[A-Za-z_$][\w$]*")
# A label is any PTX identifier (one may begin with `%`) and ptxas allows spaces before its colon
# (nvcc writes `prototype_0 : .callprototype`): a pattern that knew only `[\w$]+:` read
# `%L: ld...` as an opcode `%L:` and every rule looked past the instruction (review 32).
_LABEL = r"(%?[\w$]+)\s*:(?!:)"
_GUARD = re.compile(r"^(?:[{}]\s*|" + _LABEL + r"\s*|@\s*!?\s*%?[\w$]+\s+)*")   # scope braces, labels, guards (ptxas allows `@ !q`)
_OPCODE = re.compile(r"[a-z][\w.:]*")


def _statements(body: str) -> list[tuple[str, list[str], str]]:
    """(op, operands, text) per statement: split at `;`, whitespace folded, the scope braces,
    labels and guard predicates before it dropped, directives left out."""
    out = []
    for raw in body.split(";"):
        # (`ld .param.u64` is `ld.param.u64` to ptxas: an opcode's parts may stand apart)
        st = re.sub(r"^([\w:]+(?:\s*\.\s*[\w:]+)*)", lambda m: re.sub(r"\s+", "", m.group(1)),
                    _GUARD.sub("", " ".join(raw.split())))
        op, _, rest = st.partition(" ")
        if op and not op.startswith("."):
            out.append((op, [a.strip() for a in rest.split(",")] if rest else [], st))
    return out


def _unreadable(stmts) -> list[str]:
    """Statements that do not begin with an opcode once labels and guards are gone: every rule reads
    a statement's first word as its opcode, so a prefix they do not know hides the instruction."""
    return [f"`{st[:80]}`: a statement the PTX rules cannot read (no opcode where one belongs)"
            for op, _, st in stmts if not _OPCODE.fullmatch(op)]


def _definitions(stmts) -> dict[str, list[tuple[str, list[str]]]]:
    """name -> the statements that write it: the first operand unless it is an address, all of a
    vector's `{a, b, ...}` destination (an earlier version read only its first name, so a vector
    load's other names kept the class of their other definitions), every name of a `call`'s
    return list `(a, b, ...)` (a `.func` with several `.reg` returns writes each of them; review 34:
    only the first was read, so `call (t, pol), f, (x)` redefined a createpolicy `pol` unseen), and
    both sides of `a|p`."""
    defs: dict[str, list[tuple[str, list[str]]]] = {}
    for op, args, _ in stmts:
        if not args or args[0].startswith("["):
            continue
        dest = args[:1]
        if args[0].startswith(("{", "(")):
            close = "}" if args[0].startswith("{") else ")"
            end = next((i for i, a in enumerate(args) if a.endswith(close)), len(args) - 1)
            dest = args[:end + 1]
        for name in _NAME.findall(" ".join(dest)):
            defs.setdefault(name, []).append((op, args))
    return defs


# A cache_hint access hands its last operand to the hardware as the access's memory descriptor
# (ptxas moves it into desc[URx] unchanged), so the word must be one that createpolicy makes:
# `createpolicy.cvt` passes any 64-bit value through, and a plain register holds anything
# (review 30's bad/zz31_handmade_descriptor_cvt faulted with an illegal instruction on the H100).
# CuTe names three fixed words (CacheHintSm90: evict normal, first and last), which honest
# CUTLASS-style code moves in as immediates; those are allowed too.
_POLICY_MAKERS = ("createpolicy.fractional", "createpolicy.range")
_NAMED_POLICIES = frozenset({0x1000000000000000, 0x12F0000000000000, 0x14F0000000000000})
_INT_IMMEDIATE = re.compile(r"(0[xX][0-9a-fA-F]+|\d+)U?")


def _policies(stmts) -> set[str]:
    """Names every definition of which is a createpolicy (not .cvt), a named CuTe word, or a copy
    of such a name (flow-insensitive, to a fixpoint, as `_classes`)."""
    defs = _definitions(stmts)

    def source(op: str, args: list[str]):
        """True: the definition makes a policy; False: it never does; a name: it does once that name
        is known (a copy)."""
        if op.startswith(_POLICY_MAKERS):
            return True
        if not op.startswith("mov.") or len(args) != 2:
            return False
        if m := _INT_IMMEDIATE.fullmatch(args[1]):   # (PTX reads `010` as octal; Python's int(.., 0) raised)
            txt = m.group(1)
            try:
                return int(txt, 8 if re.fullmatch(r"0\d+", txt) else 0) in _NAMED_POLICIES
            except ValueError:
                return False
        return args[1]

    # The least fixpoint by a worklist (review 39): recomputing every name until nothing changed took
    # one pass per link of a copy chain, quadratic (4,000 `mov` copies: 43 s, with no bound on the
    # rules' time); each definition is now looked at once, and each copy once more when its source
    # becomes known.
    waiting: dict[str, int] = {}      # name -> its definitions not yet known to make a policy
    users: dict[str, list[str]] = {}  # name -> the names with a definition that copies it
    ready: list[str] = []
    for n, ds in defs.items():
        deps = [source(op, args) for op, args in ds]
        if False in deps:
            continue
        names = [d for d in deps if d is not True]
        for d in names:
            users.setdefault(d, []).append(n)
        if names:
            waiting[n] = len(names)
        else:
            ready.append(n)
    known: set[str] = set()
    while ready:
        m = ready.pop()
        known.add(m)
        for n in users.get(m, ()):
            if n in waiting:
                waiting[n] -= 1
                if not waiting[n]:
                    del waiting[n]
                    ready.append(n)
    return known


def _policy_uses(stmts, body: str) -> list[str]:
    """Every `.L2::cache_hint` access whose policy operand is not a `_policies` name, or is one that
    some path reaches unwritten (`_unwritten_reads`), and any `createpolicy.cvt`."""
    out: list[str] = []
    known = _policies(stmts)
    for op, args, st in stmts:
        if op.startswith("createpolicy.cvt"):
            out.append(f"`{st[:80]}` makes a cache policy from a plain value (createpolicy.cvt passes any word "
                       "through as a memory descriptor)")
        elif "cache_hint" in op and (not args or args[-1] not in known):
            out.append(f"`{st[:80]}` gives a cache_hint access a policy word that createpolicy did not make: the word "
                       "is the access's memory descriptor")
    try:
        unwritten = _unwritten_reads(body, known)
    except _TooComplex:
        return out + [f"more cache_hint policy reads and writes, declarations or paths than the rule can check "
                      f"({PATH_STEPS} steps): a policy register it cannot follow is not accepted"]
    for st in unwritten:
        out.append(f"`{st[:80]}` reads a cache_hint policy register that a path reaches unwritten (a guarded or "
                   "jumped-over createpolicy, or one in another scope): ptxas fills an undefined descriptor with "
                   "whatever registers it likes")
    return out


# A scope brace or a label before a statement (what `_unwritten_reads` peels off each `;` piece: a
# brace inside a statement is a vector operand's, not a scope's).
_LEAD = re.compile(r"\s*(?:([{}])|" + _LABEL + ")")


def _unwritten_reads(body: str, known: set[str]) -> list[str]:
    """The statements that read a policy register (a cache_hint access's policy operand, a `mov`
    copying one into another) that some path from the function's entry reaches without passing an
    unguarded write of the same register (the same `.reg` declaration: nested scopes may reuse a
    name) placed before the read. `_policies` is flow-insensitive: a createpolicy under a false
    guard, one a branch jumps over, or one after the read, is its register's only definition, and
    ptxas fills the unwritten register with whatever it likes (review 31, bad/zz33_policy_undefined_
    on_a_path: desc[UR4] = {a thread's word, c[0x0][0x28]} on sm_90a). The paths follow the text,
    `bra` to its label (an unknown label, or `brx`, to every label; a name that labels several
    statements, one per scope, to each of them) and stop at `ret`/`exit`/`trap`.
    Review 32: the function was once split at every brace, so a vector operand (`{%r1, %r2}`) cut
    its access in pieces and its policy read went unseen; and a label name kept only its last
    position, so a `bra` over a createpolicy seemed to land at another scope's label of that name."""
    if not known:
        return []
    # per open scope: its names (-> declaration id) and its ranges (prefix, count, id) such as %r<N>
    scopes: list[tuple[dict[str, int], list[tuple[str, int, int]]]] = [({}, [])]
    decl_ids = iter(range(1, 1 << 30))
    budget = [PATH_STEPS]   # the name lookups' steps and the path searches', together
    writes: dict[tuple[int, str], list[int]] = {}     # (declaration, name) -> positions of unguarded policy writes
    reads: list[tuple[int, str, int, str]] = []       # (position, name, declaration, statement)
    labels: dict[str, list[int]] = {}
    jumps: dict[int, tuple[str, bool]] = {}          # position -> (target label, "" for brx; falls through)
    pos = 0

    def resolve(name: str) -> int:
        # Innermost scope first (ptxas refuses a name declared twice in one scope, so a scope holds
        # at most one match). Review 77 (bad/zz77_policy_scope_lookup_stall): a scan of every
        # declaration per read cost reads x declarations with no budget, 65,536 names and 32,768
        # reads ~30 s of the build's Python and 32 MB of them hours; a name is now one lookup, and
        # the ranges' comparisons count against the budget.
        for names, ranges in reversed(scopes):
            budget[0] -= 1 + len(ranges)
            if budget[0] < 0:
                raise _TooComplex
            if name in names:
                return names[name]
            for n, count, ident in reversed(ranges):
                if name.startswith(n) and name[len(n):].isdigit() and int(name[len(n):]) < count:
                    return ident
        return 0
    for piece in body.split(";"):
        text = " ".join(piece.split())
        while m := _LEAD.match(text):
            if m.group(1) == "{":
                scopes.append(({}, []))
            elif m.group(1) == "}":
                if len(scopes) > 1:
                    scopes.pop()
            else:
                labels.setdefault(m.group(2), []).append(pos + 1)
            text = text[m.end():]
        text = text.strip()
        if not text:
            continue
        if names := _reg_names(text):
            for d in names:
                r = re.fullmatch(r"(%?[\w$]+)\s*<\s*(\d+)\s*>", d)
                if r:
                    scopes[-1][1].append((r.group(1), int(r.group(2)), next(decl_ids)))
                else:
                    scopes[-1][0][d] = next(decl_ids)
            continue
        if text.startswith("."):
            continue
        guarded = text.startswith("@")
        stmts = _statements(text)
        if not stmts:
            continue
        pos += 1
        op, args, st = stmts[0]
        if op.startswith(("bra", "brx")):
            jumps[pos] = (args[-1] if op.startswith("bra") and args else "", guarded)
        elif op.split(".")[0] in ("ret", "exit", "trap") and not guarded:
            jumps[pos] = ("-", False)
        if "cache_hint" in op and args and args[-1] in known:
            reads.append((pos, args[-1], resolve(args[-1]), st))
        if op.startswith("mov.") and len(args) == 2 and args[0] in known and args[1] in known:
            reads.append((pos, args[1], resolve(args[1]), st))
        if args and args[0] in known and not guarded and (
                op.startswith(_POLICY_MAKERS) or op.startswith("mov.")):
            writes.setdefault((resolve(args[0]), args[0]), []).append(pos)
    every = sorted({p for ps in labels.values() for p in ps})

    def next_of(p: int) -> list[int]:
        if p not in jumps:
            return [p + 1]
        lab, falls = jumps[p]
        to = [] if lab == "-" else labels.get(lab, every) if lab else every
        return to + ([p + 1] if falls else [])

    # Review 39 (bad/zz39_policy_path_search_blowup): a search per (read, write) pair cost reads x
    # writes x statements, and nothing bounds the rules' time (the build's timeout is nvcc's and
    # ptxas's): 1,024 createpolicy writes jumped over and 1,024 reads after them, a few lines of
    # macros, took minutes, 8x that hours, and the reward batch waited. Now one search per write
    # (what the entry reaches without passing it), and a budget of steps in all: past it the
    # function is refused (fail closed: what the rule cannot finish checking is not accepted).
    reach: dict[int, set[int]] = {}

    def reached_without(w: int) -> set[int]:   # what some path from the entry reaches without passing `w`
        if w not in reach:
            seen, todo = ({1}, [1]) if w != 1 else (set(), [])
            while todo:
                p = todo.pop()
                for q in next_of(p):
                    budget[0] -= 1
                    if q != w and q not in seen and q <= pos:
                        seen.add(q)
                        todo.append(q)
                if budget[0] < 0:
                    raise _TooComplex
            reach[w] = seen
        return reach[w]
    return [st for at, name, ident, st in reads
            if not any(w < at and at not in reached_without(w) for w in writes.get((ident, name), []))]


PATH_STEPS = 4_000_000   # the lookups' and path searches' steps per function (every honest kernel: under 20,000)


class _TooComplex(Exception):
    """A function whose declarations and paths the policy rule cannot follow within `PATH_STEPS`."""


def _classes(stmts, sizes: dict[str, int]) -> dict[str, str]:
    """name -> "P:<param>" when every definition of it is a copy of that parameter's address,
    "G:<param>" when every definition is a cvta.param of such a name (or a copy of one); names
    defined any other way get no class (flow-insensitive: one other definition anywhere is enough)."""
    defs = _definitions(stmts)
    # The least fixpoint by a worklist (review 39: a pass per link of a copy chain was quadratic, as in
    # `_policies`). A definition is a class at once (a copy of a parameter), never one, or one once its
    # source's class is known; a name whose definitions are all known gets their class when they agree,
    # and a name's class, once given, never changes (what the passes to a fixpoint computed).
    waiting: dict[str, list] = {}     # name -> [definitions still waiting on a source, classes so far]
    users: dict[str, list[tuple[str, str]]] = {}   # source -> (name, op) of each definition copying it
    cls: dict[str, str] = {}
    ready: list[str] = []

    def settle(n: str, got: set[str]) -> None:
        if len(got) == 1 and "other" not in got:
            cls[n] = got.pop()
            ready.append(n)

    for name, ds in defs.items():
        got, pending = set(), 0
        for op, args in ds:
            src = args[1] if len(args) == 2 else ""
            if op.startswith("mov.") and src in sizes:
                got.add("P:" + src)
            elif (op.startswith("mov.") or op.startswith("cvta.param")) and src in defs:
                users.setdefault(src, []).append((name, op))
                pending += 1
            else:
                got.add("other")
        if "other" in got:
            continue
        if pending:
            waiting[name] = [pending, got]
        else:
            settle(name, got)
    while ready:
        m = ready.pop()
        for n, op in users.get(m, ()):
            if n not in waiting:
                continue
            w = waiting[n]
            w[0] -= 1
            w[1].add(cls[m] if op.startswith("mov.") else "G:" + cls[m][2:] if cls[m].startswith("P:") else "other")
            if not w[0]:
                del waiting[n]
                settle(n, w[1])
    return cls


def _param_uses(stmts, sizes: dict[str, int], entry: set[str]) -> list[str]:
    cls = _classes(stmts, sizes)
    out: list[str] = []
    # A generic address of a parameter must stay one: a name cvta.param writes and anything else
    # also writes would lose its class, and its uses their check.
    for op, args, st in stmts:
        if op.startswith("cvta.param") and args and not cls.get(args[0], "").startswith("G:"):
            out.append(f"`{st[:80]}` writes a parameter's generic address into a register written otherwise too")
    for op, args, st in stmts:
        parts = op.split(".")
        names = [n for n in _NAME.findall(" ".join(args)) if n in cls]
        if "param" in parts or any(p.startswith("param::") for p in parts):   # the parameter space
            addr = (args[-1] if op.startswith(("ld", "cvta")) else args[0]) if args else ""
            m = re.fullmatch(r"\[\s*(%?[\w$]+)\s*(?:\+\s*(-?\d+)|-\s*(\d+))?\s*\]", addr)
            base = m.group(1) if m else ""
            off = int(m.group(2) or 0) - int(m.group(3) or 0) if m else 0
            name = cls.get(base, "")[2:] if base in cls else base
            vec, bits = re.search(r"\.v(\d)", op), re.findall(r"\.[bsuf](\d+)", op)
            width = (int(vec.group(1)) if vec else 1) * (int(bits[-1]) // 8 if bits else 1)
            # Only the address operand may name a parameter's address: a stored value, or a call's
            # argument, that is one launders it into an ordinary pointer (a review stored a
            # cvta.param result into a call parameter and read it back as a plain register).
            if parts[0] != "cvta" and any(n in cls for a in args if a != addr for n in _NAME.findall(a)):
                out.append(f"`{st[:80]}` moves a parameter's address through the parameter space")
            elif parts[0] == "cvta":
                if op.startswith("cvta.to") or not cls.get(args[-1], "").startswith("P:"):
                    out.append(f"`{st[:80]}` converts a parameter-space address that is not a parameter's")
            elif (not parts[0] in ("ld", "st") or name not in sizes or not 0 <= off <= sizes[name] - width
                  or (parts[0] == "st" and base not in sizes)):
                out.append(f"`{st[:80]}` reaches the parameter bank outside a parameter")
            continue
        if op.startswith("mov.") and len(args) == 2 and args[0] in cls:
            continue   # a copy that keeps its class (classified above)
        if op.startswith(_TMA_OPS) and all(cls[n].startswith("G:") for n in names) and not any(
                re.search(re.escape(n) + r"\s*[-+]", st) for n in names):
            if small := [cls[n][2:] for n in names if sizes.get(cls[n][2:], 0) < TENSOR_MAP_BYTES]:
                # a descriptor the harness encodes is a 128-byte parameter; one named by a smaller
                # parameter's address is the bytes of the arguments after it, which the candidate
                # chose (review 53: 32 {"int"} arguments laid out as a CUtensorMap)
                out.append(f"`{st[:80]}` names {small[0]}, a parameter of {sizes.get(small[0], 0)} bytes, as a TMA "
                           f"descriptor: only a {TENSOR_MAP_BYTES}-byte tensor-map parameter is one")
            continue   # a descriptor named by its parameter's own address, no offset
        if names or (not op.startswith("call") and any(n in entry for n in _NAME.findall(" ".join(args)))):
            out.append(f"`{st[:80]}` uses the address of a kernel parameter other than to read it or to name a TMA "
                       "descriptor")
    return out


_MODULE_ID = re.compile(r"_(INTERNAL|GLOBAL__N_)_([0-9a-f]{8})_")


def canonical_ptx(text: str) -> str:
    """PTX with nvcc's per-path module id (in internal-linkage names) replaced by zeros."""
    return _MODULE_ID.sub(lambda m: f"_{m.group(1)}_00000000_", text)
