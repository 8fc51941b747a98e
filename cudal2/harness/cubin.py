"""What a built v2 cubin holds, and the checks a device-only candidate's binary must pass.

Guarantees:
- `inspect(data)` reads the ELF section and symbol tables of a cubin (no CUDA needed) and
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


def inspect(data: bytes) -> CubinInfo:
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise CubinError("not a 64-bit ELF file")
    try:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        strtab_off = heads[shstrndx][4]

        def name_at(off: int, base: int) -> str:
            end = data.index(b"\0", base + off)
            return data[base + off:end].decode("latin-1")

        names = [name_at(h[0], strtab_off) for h in heads]
        info = CubinInfo(sections=names)
        info.entries = sorted(n[len(".nv.info."):] for n in names if n.startswith(".nv.info."))
        for h in heads:
            if h[1] != 2:  # SHT_SYMTAB
                continue
            _, _, _, _, off, size, link, _, _, entsize = h
            sym_strs = heads[link][4]
            for j in range(size // (entsize or 24)):
                st_name, st_info, st_other, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", data, off + j * 24)
                if st_shndx == 0 and st_name:
                    sym = name_at(st_name, sym_strs)
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
    missing = [k for k in kernels if k not in info.entries]
    if missing:
        out.append(f"launch spec names kernels the cubin does not define as extern \"C\" __global__: {missing} "
                   f"(entries: {info.entries[:8]})")
    return out


_CONST_TO_GENERIC = re.compile(r"\bcvta\.const\b")


def ptx_violations(ptx: str) -> list[str]:
    """What the canonical PTX may not do: take a generic address of `__constant__` data (cvta.const),
    through which constant memory could be written and kept from one call to the next."""
    if _CONST_TO_GENERIC.search(ptx):
        return ["a generic pointer to __constant__ memory (cvta.const): constant data is read-only and may not "
                "carry state between calls"]
    return []


_MODULE_ID = re.compile(r"_(INTERNAL|GLOBAL__N_)_([0-9a-f]{8})_")


def canonical_ptx(text: str) -> str:
    """PTX with nvcc's per-path module id (in internal-linkage names) replaced by zeros."""
    return _MODULE_ID.sub(lambda m: f"_{m.group(1)}_00000000_", text)
