"""What a v2 cubin's machine code reads from constant memory (and the window bases): the check
under the PTX rules.

The PTX rules (`cubin.ptx_violations`) read text that a candidate writes, and three spellings got
past them before they were mended. This check reads what ptxas emitted instead, so a spelling
cannot hide a read: constant bank 0 holds the launch's parameters from 0x210 and, below them, the
driver's words (dimensions, windows, descriptors, and the constant bank's own address at 0xd0);
a candidate may read its parameters and the few words ptxas itself reads for PTX's special
registers, and nothing else.

Guarantees:
- `violations(path)` disassembles every kernel of the cubin (nvdisasm) and lists, one line per
  kind, each constant read it does not allow: any bank but 0, a bindless bank (`cx[...]`), an
  index register (other than RZ/URZ), a read below the parameters outside DRIVER_WORDS (`%gridid`
  at 0x30 and the constant bank's address at 0xd0 among them), a read past the kernel's own
  parameters (their size from the cubin's CBANK_PARAM_SIZE record), a read of padding between
  them (a byte no KPARAM_INFO record gives a parameter: review 53); and a read of either window's
  base (the local one at 0x20, the shared one from `SR_SWINHI`/`SR_SWINLO`), from which a
  constant offset reaches the parameter bank, and any test of an address's space (`QSPC`, from
  `isspacep`), which finds a window's base by search; and the performance monitors (`SR_PM*`
  reads, from %pm0..%pm7, and `PMTRIG`, from pmevent): per-SM counters that no launch resets and
  no scrub reaches; and dropping L2 lines without writing them back (`CCTL.E.RML2`, from
  `discard.global.L2`), by which a call skips the write-back of the dirty lines every runner's
  call inherits from the L2 flush, and loads of global memory with the last-use hint
  (`LDG.E.LU`/`LD.E.LU`, from `ld.global.lu`/`ld.lu`), whose effect on a dirty line is undocumented;
- it fails closed: without nvdisasm, with a listing that disagrees with the cubin's bytes, or
  with instructions it cannot place in a kernel, the cubin is refused with the reason.

`violations` disassembles the cubin once (`cudal2.sass.disasm`) and also runs `paramflow.check`
on that listing, which follows the one allowed word that is an address (0x198, the parameter
bank's generic address) to its uses, and `sassdesc.check`, which asks that every global memory
access's descriptor (`desc[URx]`) be the driver's (0x208) or a createpolicy word on every path.

Does not: follow what any other value read from an allowed word is used for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cudal2.harness import cubin, paramflow, sassdesc
from cudal2.sass import disasm
from cudal2.sass.cubin import Cubin
from cudal2.sass.disasm import Listing

PARAM_BASE = 0x210
# Words below the parameters that ptxas reads for PTX's special registers and its own code (each
# found by compiling a one-line kernel that reads the register, and in the survey of the shipped
# library, the good controls, the task references and family points). Offset: (bytes, what).
DRIVER_WORDS = {
    0x000: (12, "%ntid (blockDim)"),
    0x00C: (12, "%nctaid (gridDim)"),
    0x028: (4, "the stack pointer's start"),
    0x02C: (4, "%dynamic_smem_size"),
    0x10C: (4, "%nsmid"),
    0x114: (4, "%total_smem_size"),
    0x140: (4, "the cluster's size (ptxas's cluster barrier)"),
    0x144: (12, "%cluster_nctaid"),
    0x150: (12, "%clusterid, %cluster_ctaid, %is_explicit_cluster"),
    0x15C: (12, "%nclusterid"),
    0x188: (4, "%cluster_nctarank"),
    0x198: (8, "the parameter bank's generic address (TMA descriptors)"),
    0x208: (8, "the global memory descriptor"),
}
_LOCAL_WINDOW = "the local window's base (what a generic address of local memory is formed from)"
REFUSED_NAMES = {0x20: _LOCAL_WINDOW, 0x24: _LOCAL_WINDOW, 0x30: "%gridid", 0xD0: "the constant bank's address"}
# The shared window's base comes from special registers, not the bank (`S2UR UR6, SR_SWINHI`).
# Both window bases are refused (the fifteenth review): the parameter bank, %gridid below it,
# sits at a distance from the local window that repeats across processes (eval/window_probe.py:
# one of two values in 12 processes), so base plus a constant reaches it with no read of 0x198.
# Honest code rarely needs either: no cubin of the survey read 0x20, and the one task reference
# that read SR_SWINHI (it pulled a peer's shared memory with cluster.map_shared_rank; ptxas makes
# ld.shared::cluster the same generic LD) now pushes with st.async, which takes a shared::cluster
# address from mapa and compiles to no window read.
_WINDOW_SREG = re.compile(r"\bSR_[SL]WIN\w*")
# A window's base can also be searched for: `isspacep.local` (`QSPC.E.L`) says whether an address
# is local without reading either word, so a kernel tested 16 MiB-aligned candidates until one
# was (the review after the window rule: it then reached %gridid as before). Whether an address
# is in a space is refused too (QSPC, every space; no honest cubin of the survey emits it).
_SPACE_TEST = "QSPC"
# The SM's performance monitors: counters a kernel can bump (pmevent -> PMTRIG) and read
# (%pm0..%pm7 -> SR_PM*) that outlive the launch, so a call could count the calls before it on its
# SM with no memory at all (a review after the QSPC rule: it built). Honest kernels use neither
# (none of the survey's cubins does); `%clock` and `%globaltimer` are other registers, still allowed.
_PM_SREG = re.compile(r"\bSR_PM\w*")
_PM_TRIGGER = "PMTRIG"
# `discard.global.L2` drops a line without writing it back. Pointed at the dirty lines the L2 flush
# leaves (the flush buffer's address leaked to a candidate through registers in review 26), a call
# skips a write-back every other runner's call pays; pointed at its own output it only loses data.
# No honest cubin of the survey emits it (3 of 1039 did: the flush itself and two attacks).
_DISCARD = re.compile(r"\bCCTL\S*\.RML2\b")
# `ld.global.lu` and generic `ld.lu` keep an encoding of their own (LDG.E.LU, LD.E.LU; `.cs` becomes
# LDG.E.EF). PTX says .lu on global addresses acts as .cs, and that it exists to avoid "needless
# write-backs of lines that will not be used again": what it does to a dirty L2 line is not
# documented, and a call that could drop the flush's dirty lines unwritten skips a cost every runner
# pays (bad/zz29_stale_pointer_ld_lu). Spill restores use LDL.LU, local memory, which stays allowed.
_LAST_USE = re.compile(r"\bLDG?(?:\.\w+)*\.LU\b")
_ALLOWED = frozenset(b for off, (n, _) in DRIVER_WORDS.items() for b in range(off, off + n))

_CONST = re.compile(r"\bc\[(0x[0-9a-f]+)\]\[([^\]]*)\]")
_WIDTH = {".64": 8, ".128": 16, ".U8": 1, ".S8": 1, ".U16": 2, ".S16": 2}
_ZERO_REG = {"RZ", "URZ"}


@dataclass(frozen=True)
class Params:
    """What a cubin's records say of each kernel's parameters, read once (`params_of`):
    - sizes: bytes of parameters (CBANK_PARAM_SIZE; 0 where the cubin records none);
    - owned: the bytes a parameter holds, as offsets from the first (KPARAM_INFO: ordinal u16 and
      offset u16 after a u32 index, then a word whose bits 18-31 are the size, as cuobjdump -elf
      reads them). The padding between parameters is in no parameter: what the driver leaves there
      is no argument the harness gave (review 53);
    - tensor_maps: the offsets of the 128-byte parameters, the tensor maps (`{"tmap"}`, a CUtensorMap;
      no other argument of the launch vocabulary is that large), the only descriptors a TMA
      instruction may name (`paramflow`)."""
    sizes: dict[str, int]
    owned: dict[str, frozenset[int]]
    tensor_maps: dict[str, frozenset[int]]


def params_of(data: bytes) -> Params:
    sizes, owned, tmaps = {}, {}, {}
    for name, k in Cubin.from_bytes(data).kernels.items():
        sizes[name] = max((int.from_bytes(a.payload[:2], "little") for a in k.attrs if a.name == "CBANK_PARAM_SIZE"),
                          default=0)
        ps = [(int.from_bytes(a.payload[6:8], "little"), int.from_bytes(a.payload[8:12], "little") >> 18)
              for a in k.attrs if a.name == "KPARAM_INFO" and len(a.payload) >= 12]
        owned[name] = frozenset(b for off, size in ps for b in range(off, off + size))
        tmaps[name] = frozenset(off for off, size in ps if size == cubin.TENSOR_MAP_BYTES)
    return Params(sizes, owned, tmaps)


def _width(insn: str) -> int:
    """Bytes a constant operand of `insn` covers: by the opcode's suffix, 8 for double-precision
    arithmetic (its operands are register pairs), else 4."""
    words = insn.split()
    op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    if op.startswith(("DADD", "DMUL", "DFMA", "DSETP", "DMNMX")):
        return 8
    return max((w for suffix, w in _WIDTH.items() if suffix in op), default=4)


def _offset(index: str) -> int | None:
    """The byte offset a `c[bank][...]` operand names, or None when a register indexes it."""
    off = 0
    for part in (p.strip() for p in index.split("+")):
        if re.fullmatch(r"-?0x[0-9a-f]+", part):
            off += int(part, 16)
        elif part not in _ZERO_REG:
            return None
    return off


def check(listings: dict[str, Listing], params: dict[str, int],
          owned: dict[str, frozenset[int]] | None = None) -> list[str]:
    """What the disassembled cubin reads from constant memory that it may not, one line per kind;
    with `owned` (`Params.owned`), also a read of a parameter space byte no parameter holds."""
    bad: dict[str, str] = {}
    reads = []
    for kernel, lst in listings.items():
        for i in lst.instrs:
            if m := _WINDOW_SREG.search(i.text):
                bad.setdefault("window", f"`{i.text}` in {kernel} reads {m.group()}, a memory window's base: "
                                         "generic addresses of shared or local memory are not allowed (index "
                                         "__shared__ and local arrays directly; give another CTA of the cluster data "
                                         "with st.async to the address mapa gives, not by reading its memory)")
            if (m := _PM_SREG.search(i.text)) or i.base == _PM_TRIGGER:
                bad.setdefault("pm", f"`{i.text}` in {kernel} uses the SM's performance monitors "
                                     f"({m.group() if m else 'pmevent'}): counters that outlive a launch; not allowed")
            if _DISCARD.search(i.text):
                bad.setdefault("discard", f"`{i.text}` in {kernel} drops L2 lines without writing them back "
                                          "(discard.global.L2): not allowed (it can skip write-backs the "
                                          "harness's flush leaves for every runner)")
            if _LAST_USE.search(i.text):
                bad.setdefault("last_use", f"`{i.text}` in {kernel} loads global memory with the last-use hint "
                                           "(ld.global.lu / ld.lu): what it does to a dirty L2 line is not "
                                           "documented; not allowed (use .cs or an evict_first policy)")
            if i.base == _SPACE_TEST:
                bad.setdefault("space", f"`{i.text}` in {kernel} tests which memory space an address is in "
                                        "(isspacep): a search for a window's base; not allowed (a kernel knows "
                                        "where its own pointers point)")
            if "c[" in i.text or "cx[" in i.text:
                reads.append((kernel, i.text))
    for kernel, insn in reads:
        if kernel not in params:
            bad.setdefault("where", f"`{insn}` is in no kernel the cubin defines")
            continue
        if "cx[" in insn:
            bad.setdefault("bindless", f"`{insn}` in {kernel} reads a constant bank chosen at run time")
        for bank, index in _CONST.findall(insn):
            off = _offset(index)
            if int(bank, 16) != 0:
                bad.setdefault("bank", f"`{insn}` in {kernel} reads constant bank {bank} (only the launch's bank 0 "
                                       "is the kernel's)")
            elif off is None:
                bad.setdefault("index", f"`{insn}` in {kernel} indexes the parameter bank with a register: it "
                                        "could reach the driver's words below the parameters")
            elif off >= PARAM_BASE:
                if off + _width(insn) > PARAM_BASE + params[kernel]:
                    bad.setdefault("past", f"`{insn}` in {kernel} reads past its {params[kernel]} bytes of "
                                           "parameters")
                elif owned is not None and not all(b - PARAM_BASE in owned.get(kernel, ()) for b in
                                                   range(off, off + _width(insn))):
                    bad.setdefault("padding", f"`{insn}` in {kernel} reads bytes at 0x{off:x} of the parameter "
                                              "bank that no parameter holds (padding between parameters)")
            elif not all(b in _ALLOWED for b in range(off, off + _width(insn))):
                what = REFUSED_NAMES.get(off, "a driver word")
                bad.setdefault("driver", f"`{insn}` in {kernel} reads {what} at 0x{off:x} of the parameter bank, "
                                         "which is not the kernel's to read")
    return list(bad.values())


def violations(path: str | Path) -> list[str]:
    """`check` on the disassembly of the cubin at `path`; a cubin that cannot be disassembled is
    refused."""
    try:
        data = Path(path).read_bytes()
        params = params_of(data)
        listings = disasm.disassemble(data)
    except disasm.UNREADABLE as e:
        return [f"the machine code could not be checked ({str(e).splitlines()[0][:300]})"]
    return (check(listings, params.sizes, params.owned) + paramflow.check(listings, params.tensor_maps)
            + sassdesc.check(listings))
