"""What a built v2 cubin holds, and the checks a device-only candidate's binary must pass.

Guarantees:
- `sections(data)` reads the ELF section headers of a cubin (no CUDA needed); `inspect(data)`
  returns its sections, entry kernels and unresolved symbols;
- `violations(info, kernels)` lists, one line each, what the contract forbids in the binary
  whatever the source looked like: writable module globals (`.nv.global*`: state that would
  survive from one call to the next), unresolved symbols (device malloc/free, printf, device-side
  launches: code the harness did not see), and spec kernels that are not entry points;
- `ptx_violations(ptx)` lists what the PTX may not do (a generic address of constant memory,
  the one way to write it);
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
    state = sorted(s for s in info.sections if s.startswith(".nv.global"))
    if state:
        out.append(f"writable module globals ({', '.join(state)}): __device__/__managed__ variables keep state "
                   "across calls; use the workspace")
    if info.undefined:
        out.append(f"unresolved symbols {sorted(set(info.undefined))[:6]}: device malloc/free, printf and device-side "
                   "launches are not allowed")
    relocated = sorted(s for s in info.sections if s.startswith((".rela.nv.constant", ".rel.nv.constant")))
    if relocated:   # an address stored in constant data: a way to reach module memory and write it
        out.append(f"relocated constant data ({', '.join(relocated)}): a pointer kept in __constant__ memory "
                   "reaches module memory that keeps state across calls")
    missing = [k for k in kernels if k not in info.entries]
    if missing:
        out.append(f"launch spec names kernels the cubin does not define as extern \"C\" __global__: {missing} "
                   f"(entries: {info.entries[:8]})")
    return out


_CONST_TO_GENERIC = re.compile(r"\bcvta\.const\b")
_GENERIC_INIT = re.compile(r"\bgeneric\s*\(")


def ptx_violations(ptx: str) -> list[str]:
    """What the canonical PTX may not do: take a generic address of `__constant__` data, by
    cvta.const or by an initializer (`= generic(sym)`, a pointer stored in module data), through
    which constant memory could be written and kept from one call to the next."""
    out = []
    if _CONST_TO_GENERIC.search(ptx):
        out.append("a generic pointer to __constant__ memory (cvta.const): constant data is read-only and may not "
                   "carry state between calls")
    if _GENERIC_INIT.search(ptx):
        out.append("a generic address of module data in an initializer (generic(...)): a pointer stored in "
                   "__constant__ memory reaches module memory that keeps state between calls")
    return out


_MODULE_ID = re.compile(r"_(INTERNAL|GLOBAL__N_)_([0-9a-f]{8})_")


def canonical_ptx(text: str) -> str:
    """PTX with nvcc's per-path module id (in internal-linkage names) replaced by zeros."""
    return _MODULE_ID.sub(lambda m: f"_{m.group(1)}_00000000_", text)
