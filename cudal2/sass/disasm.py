"""Disassemble a cubin with nvdisasm and parse every instruction: text, 128-bit word, control
fields, registers read and written, and basic blocks.

Guarantees:
- a cubin of more than `MAX_WORDS` instruction words (all its `.text.*` sections) is refused
  (`DisasmError`) before nvdisasm runs: the listing's time grows faster than the code (review 40);
- one `nvdisasm -c -hex -plr -lrm narrow` run per cubin; each instruction's word, as printed,
  is checked against the cubin's bytes at `.text.<kernel>` + offset (a mismatch raises);
- `Control` decodes bits 105-125 of the word (bit 0 = LSB of the 128-bit little-endian word):
  stall 105-108, yield 109, write scoreboard 110-112, read scoreboard 113-115 (7 = none, given
  as None), wait mask 116-121, reuse 122-125;
- `reads` / `writes` come from nvdisasm's life-range table: per instruction and per register
  (GPR R*, predicate P*, uniform UR*, uniform predicate UP*) it marks a use `v`, a definition
  `^` or both `x`. The table knows operand widths (`LDS.128 R4` defines R4..R7, `HMMA` reads its
  register pairs and quads), which parsing the text could not;
- `Instr.named` lists the registers the text names (base registers only) as a cross-check:
  `unexplained()` returns those the table does not mark, which the legality checker treats as
  read and written (the conservative reading);
- the words after the function's end (alignment NOPs) are not listed;
- `labels` holds every label nvdisasm prints (`.L_x_3`, the function's own name, and a local
  subroutine's such as `$k$f`, which a CALL names and the section holds after the kernel's code);
- blocks: a block starts at offset 0, at every label and after every control-flow instruction
  (EXIT and BRA even when predicated: nothing may cross them); successors are the fall-through
  and the label a branch names. An indirect branch (BRX/JMX) makes every block a successor.

Does not:
- see registers the table leaves out: RZ/PT/URZ/UPT, special registers (SR_*), barrier
  registers (B0..), the convergence state. What reads or writes those is pinned in `isa`;
- promise that the table marks a register defined and never used (a dead half of a wide
  result): it did in every case seen (the shipped kernels, the tests' mbarrier kernel), and
  `unexplained()` still covers the registers the text names;
- interpret the instructions' semantics (that is `isa` and `legality`).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cudal2.sass import tools
from cudal2.sass.cubin import WORD, Cubin, CubinError

NO_BARRIER = 7
# The most instruction words (16 bytes each, padding included) a cubin may hold for its machine
# code to be listed and checked. `nvdisasm -plr` (the life-range table the rules need) takes time
# superlinear in one function's length (nvdisasm 13.2 on a 2-core CPU: 8,213 instructions 2.3 s,
# 16,411 7.8 s, 32,789 30 s, 65,600 238 s), and the rules after it run outside the build's
# timeout. The largest honest cubin seen (1,226 cached builds of the survey, library and
# families) holds 5,264 words; a few macros make 65,000 (bad/zz40_nvdisasm_superlinear).
MAX_WORDS = 16384


@dataclass(frozen=True)
class Control:
    stall: int          # cycles before the next instruction may issue
    yield_: int         # the raw yield bit
    wbar: int | None    # scoreboard set when the results are written (None: fixed latency)
    rbar: int | None    # scoreboard set when the source registers have been read
    wait: int           # mask of scoreboards waited on before issue
    reuse: int          # operand reuse-cache flags, one bit per source slot

    @classmethod
    def from_word(cls, word: bytes) -> "Control":
        c = int.from_bytes(word, "little") >> 105
        wbar, rbar = (c >> 5) & 7, (c >> 8) & 7
        return cls(stall=c & 0xF, yield_=(c >> 4) & 1, wbar=None if wbar == NO_BARRIER else wbar,
                   rbar=None if rbar == NO_BARRIER else rbar, wait=(c >> 11) & 0x3F, reuse=(c >> 17) & 0xF)

    @property
    def sets(self) -> frozenset[int]:
        return frozenset(b for b in (self.wbar, self.rbar) if b is not None)

    @property
    def waits(self) -> frozenset[int]:
        return frozenset(b for b in range(6) if self.wait >> b & 1)


REUSE_MASK = 0xF << 122


def clear_reuse(word: bytes) -> bytes:
    """The same instruction with its operand-reuse flags cleared (a hint; never needed for correctness)."""
    return (int.from_bytes(word, "little") & ~REUSE_MASK).to_bytes(WORD, "little")


@dataclass
class Instr:
    index: int
    offset: int
    text: str                       # as printed, without the trailing ';'
    pred: str                       # "@P0", "@!UP1", or "" (always)
    opcode: str                     # with modifiers: "IMAD.MOV.U32"
    operands: list[str]
    word: bytes
    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    labels: list[str] = field(default_factory=list)    # labels naming this offset
    target: str | None = None       # the label a branch or BSSY names

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]

    @property
    def ctrl(self) -> Control:
        return Control.from_word(self.word)

    @property
    def named(self) -> set[str]:
        """Registers the text names (base registers; a `.64` address names the pair)."""
        out = set(_REG.findall(self.pred))
        for op in self.operands:
            for m in _REG_W.finditer(op):
                reg, wide = m.group(1), m.group(2)
                out.add(reg)
                if wide == ".64" and reg[0] in "RU":
                    out.add(_next(reg))
        return out

    def unexplained(self) -> set[str]:
        return self.named - self.reads - self.writes

    def computed_target(self) -> bool:
        """A branch or call whose target is computed: an indirect opcode (`BRX`, `JMX`, `JMP`,
        `RTT`, ...), or a `CALL` / `BRA` that names a register (a call through a function pointer
        lists as `CALL.REL.NOINC R2 `(k)`, the section's own label printed after the register,
        which is not the target: review 35). `BRA.DIV URn, `(L)` names the mask it tests, not its
        target (every stream-family cubin has one), so it is not."""
        if self.base in INDIRECT:
            return True
        if self.base not in ("BRA", "CALL") or (self.base == "BRA" and "DIV" in self.opcode.split(".")):
            return False
        return bool(_THROUGH_REG.search(" ".join(self.operands).split("`")[0]))

    def predicate_file(self) -> frozenset[str]:
        """The predicates an operand `PR` / `UPR` names as a whole file (`P2R R3, PR, RZ, 0x8`,
        `R2P PR, R2, 0x7f`): nvdisasm's life-range table marks none of P0-P6 for them (seen with
        13.2), and the mask that picks them is not read here, so a rule takes all seven as read and
        as maybe written, never as surely written."""
        return frozenset().union(*(_FILE[m.group(1)] for o in self.operands if (m := _FILE_OPERAND.fullmatch(o))))

    def __str__(self) -> str:
        return f"/*{self.offset:04x}*/ {self.text}"


@dataclass
class Block:
    index: int
    first: int          # instruction index, inclusive
    last: int           # instruction index, inclusive
    succs: list[int] = field(default_factory=list)
    preds: list[int] = field(default_factory=list)

    @property
    def indices(self) -> range:
        return range(self.first, self.last + 1)

    def __len__(self) -> int:
        return self.last - self.first + 1


@dataclass
class Listing:
    kernel: str
    instrs: list[Instr]
    blocks: list[Block]
    labels: dict[str, int]          # label -> offset

    def block_of(self, index: int) -> Block:
        for b in self.blocks:
            if b.first <= index <= b.last:
                return b
        raise IndexError(index)

    def at(self, offset: int) -> Instr:
        return self.instrs[offset // WORD]


# --- parsing -----------------------------------------------------------------------------------

_REG = re.compile(r"\b(U?R\d+|U?P\d)\b")
_REG_W = re.compile(r"(?<![\w.])(U?R\d+|U?P\d)(\.64)?\b")
_SECTION = re.compile(r"^//-+ \.text\.(\S+)\s+-+$")
_INSTR = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]{16}) \*/")
_HI = re.compile(r"^\s+/\* (0x[0-9a-f]{16}) \*/")
_LABEL = re.compile(r"^([.$\w]+):")     # `.L_x_3:`, a function's name, a subroutine's (`$k$f:`, a call's target)
_TARGET = re.compile(r"`\((\.L\w+)\)")
_PREFIX = {"GPR": "R", "PRED": "P", "UGPR": "UR", "UPRED": "UP"}
INDIRECT = ("BRX", "BRXU", "JMX", "JMXU", "JMP", "RTT")   # branches and calls to a computed address
_THROUGH_REG = re.compile(r"(?<![\w.])U?R(\d+|Z)(?![\w])")
_FILE = {"P": frozenset(f"P{n}" for n in range(7)), "UP": frozenset(f"UP{n}" for n in range(7))}
_FILE_OPERAND = re.compile(r"(U?P)R(?:\.\w+)*")
CONTROL_FLOW = {"BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "CALL", "RET", "EXIT", "BREAK", "KILL", "BPT", "RTT"}
UNCONDITIONAL_END = {"BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "RET", "EXIT", "KILL", "RTT"}


class DisasmError(RuntimeError):
    """nvdisasm said something this parser does not understand, or disagrees with the cubin."""


# What a rule reading the machine code meets when a cubin cannot be listed: it refuses the cubin.
UNREADABLE = (tools.ToolMissing, tools.ToolFailed, DisasmError, CubinError, OSError)


def _next(reg: str) -> str:
    m = re.match(r"(U?R)(\d+)", reg)
    return f"{m.group(1)}{int(m.group(2)) + 1}"


def _split_operands(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


class _LifeTable:
    """Column layout of nvdisasm's narrow life-range table: character position -> register name."""

    def __init__(self, header: list[str]):
        self.columns: dict[int, str] = {}
        title = next(h for h in header if "GPR" in h)
        hash_row = next(h for h in header if "#" in h)
        digit_rows = header[header.index(title) + 1:header.index(hash_row) + 1]
        bounds = [i for i, ch in enumerate(title) if ch == "|"]
        for lo, hi in zip(bounds, bounds[1:]):
            kind = title[lo + 1:hi].strip()
            if kind not in _PREFIX:
                raise DisasmError(f"unknown life-range section {kind!r}")
            sharp = hash_row.index("#", lo)
            for j in range(sharp + 1, hi):
                digits = "".join(r[j] for r in digit_rows if j < len(r) and r[j].isdigit())
                if digits:
                    self.columns[j] = f"{_PREFIX[kind]}{int(digits)}"

    def marks(self, row: str) -> tuple[frozenset[str], frozenset[str]]:
        reads, writes = set(), set()
        for j, reg in self.columns.items():
            ch = row[j] if j < len(row) else " "
            if ch in "vx":
                reads.add(reg)
            if ch in "^x":
                writes.add(reg)
            if ch not in " :v^x":
                raise DisasmError(f"unknown life-range mark {ch!r} for {reg}")
        return frozenset(reads), frozenset(writes)


def _comment(line: str) -> str | None:
    i = line.find("// ")
    return line[i + 3:] if i >= 0 else None


def parse(listing: str) -> dict[str, list[Instr]]:
    """Instructions per kernel from `nvdisasm -c -hex -plr -lrm narrow` output."""
    out: dict[str, list[Instr]] = {}
    lines = listing.splitlines()
    kernel, table, header, pending_labels = None, None, [], []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _SECTION.match(line.strip())
        if m:
            kernel, table, header, pending_labels = m.group(1), None, [], []
            out[kernel] = []
            i += 1
            continue
        if kernel is None:
            i += 1
            continue
        c = _comment(line)
        if table is None and c is not None and c.startswith(("+", "|")) and "/*" not in line:
            header.append(c)
            if c.startswith("+") and len(header) > 1:
                table = _LifeTable(header)
            i += 1
            continue
        lm = _LABEL.match(line.strip())
        if lm:
            pending_labels.append(lm.group(1))
            i += 1
            continue
        im = _INSTR.match(line)
        if not im:
            i += 1
            continue
        off, text, lo = int(im.group(1), 16), im.group(2), int(im.group(3), 16)
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        hm = _HI.match(nxt)
        if not hm:
            raise DisasmError(f"{kernel}+{off:#x}: no second encoding word after {text!r}")
        word = (lo | int(hm.group(1), 16) << 64).to_bytes(WORD, "little")
        pred = ""
        body = text
        pm = re.match(r"(@!?U?P[T\d])\s+(.*)", text)
        if pm:
            pred, body = pm.group(1), pm.group(2)
        opcode, _, rest = body.partition(" ")
        ins = Instr(index=len(out[kernel]), offset=off, text=text, pred=pred, opcode=opcode,
                    operands=_split_operands(rest), word=word, labels=pending_labels)
        pending_labels = []
        tm = _TARGET.search(rest)
        ins.target = tm.group(1) if tm else None
        if table is not None:
            ins.reads, ins.writes = table.marks(_comment(nxt) or "")
        if ins.offset != ins.index * WORD:
            raise DisasmError(f"{kernel}: instruction {ins.index} at {off:#x}, expected {ins.index * WORD:#x}")
        out[kernel].append(ins)
        i += 2
    return out


def _blocks(instrs: list[Instr]) -> tuple[list[Block], dict[str, int]]:
    labels = {lab: ins.offset for ins in instrs for lab in ins.labels}
    leaders = {0}
    for ins in instrs:
        if ins.labels:
            leaders.add(ins.index)
        if ins.base in CONTROL_FLOW and ins.index + 1 < len(instrs):
            leaders.add(ins.index + 1)
    starts = sorted(leaders)
    blocks = [Block(k, s, (starts[k + 1] if k + 1 < len(starts) else len(instrs)) - 1) for k, s in enumerate(starts)]
    first_to_block = {b.first: b.index for b in blocks}
    for b in blocks:
        end = instrs[b.last]
        if end.base in {"BRX", "BRXU", "JMX", "JMXU"}:
            b.succs = [x.index for x in blocks]
            continue
        if end.target is not None and end.target in labels and end.base in CONTROL_FLOW:
            b.succs.append(first_to_block[labels[end.target] // WORD])
        # BRA.DIV (and any BRA with a modifier) may fall through: only a bare BRA always jumps
        falls = not (end.base in UNCONDITIONAL_END and end.pred in ("", "@PT")
                     and (end.base != "BRA" or end.opcode == "BRA"))
        if falls and b.index + 1 < len(blocks) and (end.base not in {"RET", "EXIT"} or end.pred):
            b.succs.append(b.index + 1)
    for b in blocks:
        for s in b.succs:
            blocks[s].preds.append(b.index)
    return blocks, labels


def disassemble(data: bytes | Cubin) -> dict[str, Listing]:
    """Every kernel of an ELF cubin, parsed and checked word for word against its bytes."""
    cub = data if isinstance(data, Cubin) else Cubin.from_bytes(data)
    words = sum(k.text.size for k in cub.kernels.values()) // WORD
    if words > MAX_WORDS:   # refused before nvdisasm's superlinear listing (review 40)
        raise DisasmError(f"the cubin holds {words} instruction words, more than the {MAX_WORDS} "
                          "the machine-code rules read")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        Path(path).write_bytes(cub.data)
        text = tools.run("nvdisasm", ["-c", "-hex", "-plr", "-lrm", "narrow", path])
    per_kernel = parse(text)
    out = {}
    for name, instrs in per_kernel.items():
        if name not in cub.kernels:
            raise DisasmError(f"nvdisasm printed .text.{name}, which the ELF does not have")
        words = cub.words(name)
        # nvdisasm prints up to the function symbol's end; the rest of the section is alignment
        # padding (NOPs), never executed and never moved.
        if len(instrs) > len(words) or len(instrs) == 0:
            raise DisasmError(f"{name}: nvdisasm printed {len(instrs)} instructions, the text holds {len(words)}")
        for ins, w in zip(instrs, words):
            if ins.word != w:
                raise DisasmError(f"{name}+{ins.offset:#x}: nvdisasm's encoding {ins.word.hex()} != cubin {w.hex()}")
        blocks, labels = _blocks(instrs)
        out[name] = Listing(kernel=name, instrs=instrs, blocks=blocks, labels=labels)
    return out


def bbcfg_starts(data: bytes) -> dict[str, set[int]]:
    """Block start offsets per kernel as `nvdisasm -bbcfg -poff` draws them (a cross-check only)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        Path(path).write_bytes(data)
        dot = tools.run("nvdisasm", ["-bbcfg", "-poff", path])
    out: dict[str, set[int]] = {}
    kernel = None
    for line in dot.splitlines():
        m = re.match(r'subgraph "cluster_(.+)" \{', line)
        if m:
            kernel = m.group(1)
            out[kernel] = set()
            continue
        if kernel and line.startswith("[label="):
            m = re.search(r"(?:\\l|<entry>)([0-9a-f]{4,}):\\ ", line)
            if m:
                out[kernel].add(int(m.group(1), 16))
    return out
