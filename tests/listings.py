"""Disassembly listings written out by hand for the machine-code rules' tests: each instruction as
`TEXT | reads | writes` (nvdisasm's life-range marks), labels as `L:`."""

import re

from cudal2.sass.disasm import WORD, Instr, Listing, _split_operands


def listing(*rows: str, name: str = "k") -> Listing:
    """Instructions as `TEXT | reads | writes` (the life-range table's marks), labels as `L:`."""
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
        ins = Instr(index=len(instrs), offset=len(instrs) * WORD, text=text, pred=pred, opcode=opcode,
                    operands=_split_operands(rest), word=bytes(WORD), reads=frozenset(reads.split()),
                    writes=frozenset(writes.split()), labels=pending)
        for lab in pending:
            labels[lab] = ins.offset
        pending = []
        instrs.append(ins)
    return Listing(kernel=name, instrs=instrs, blocks=[], labels=labels)
