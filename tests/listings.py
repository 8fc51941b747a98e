"""Disassembly listings written out by hand for the machine-code rules' tests: each instruction as
`TEXT | reads | writes` (nvdisasm's life-range marks), or with `infer=True` as `TEXT` alone, labels
as `L:`."""

import re

from cudal2.sass.disasm import WORD, Instr, Listing, _split_operands


_REG = re.compile(r"(?<![\w.])(U?R\d+|U?P\d)(?![\w])")


def _inferred(opcode: str, ops: list[str], pred: str) -> tuple[set[str], set[str]]:
    """Marks as ptxas's usual instruction gives them: the first operand written (and a predicate
    written beside a register), the next register too with `.64` in the opcode; the rest read."""
    dests = ops[:2] if len(ops) > 1 and re.fullmatch(r"U?P\d", ops[0]) else ops[:1]
    writes = {r for d in dests if "[" not in d for r in _REG.findall(d)}
    if ".64" in opcode:
        writes |= {re.sub(r"\d+$", lambda n: str(int(n.group()) + 1), r) for r in writes if "R" in r}
    return {r for o in ops for r in _REG.findall(o)} - writes | set(_REG.findall(pred)), writes


def listing(*rows: str, name: str = "k", infer: bool = False) -> Listing:
    """Instructions as `TEXT | reads | writes` (the life-range table's marks), labels as `L:`; with
    `infer`, the marks of a row without them come from its operands (`_inferred`)."""
    instrs, labels, pending = [], {}, []
    for row in rows:
        if row.endswith(":"):
            pending.append(row[:-1])
            continue
        text, reads, writes = (row.split("|") + ["", ""])[:3]
        text = text.strip()
        m = re.match(r"(@!?U?P[T\d])\s+(.*)", text)
        pred, body = (m.group(1), m.group(2)) if m else ("", text)
        opcode, _, rest = body.partition(" ")
        operands = _split_operands(rest)
        marks = _inferred(opcode, operands, pred) if infer and "|" not in row else (reads.split(), writes.split())
        ins = Instr(index=len(instrs), offset=len(instrs) * WORD, text=text, pred=pred, opcode=opcode,
                    operands=operands, word=bytes(WORD), reads=frozenset(marks[0]),
                    writes=frozenset(marks[1]), labels=pending)
        for lab in pending:
            labels[lab] = ins.offset
        pending = []
        instrs.append(ins)
    return Listing(kernel=name, instrs=instrs, blocks=[], labels=labels)
