"""Read a cubin's code and the metadata that pins instruction offsets; write back a permuted text.

Guarantees:
- `Cubin.from_bytes(data)` reads a 64-bit little-endian CUDA ELF (no tools needed): sections,
  each kernel's `.text.<kernel>` offset and size, its `.nv.info.<kernel>` attribute records
  (the global `.nv.info` too), and the text offsets named by relocations;
- `Kernel.pinned` maps an instruction offset to why it may not move: an `.nv.info` offset list
  (EXIT, COOP_GROUP, INT_WARP_WIDE, MBARRIER, ... see OFFSET_LISTS) or a relocation;
- `Kernel.unknown` lists every `.nv.info` record this module cannot vouch for (a code not in
  HARMLESS or OFFSET_LISTS, or an offset list that does not decode to in-range offsets); a kernel
  with any is not to be patched (`legality` rejects every move in it);
- `words(kernel)` returns its instructions as 16-byte words, in address order;
- `with_text(kernel, text)` returns new cubin bytes with that kernel's text replaced by `text` of
  the same size; every other byte is unchanged, so `with_text(k, text(k))` is byte-identical;
- `extract(data)` returns the ELF cubins of a cubin, a fatbin or a shared library
  (through `cuobjdump -xelf all` for the latter two).

Does not:
- rewrite `.nv.info` or relocations: the patcher never moves a pinned instruction, so no
  recorded offset ever needs to change;
- check that `text` is a permutation of the old one (`patch` builds it and checks that);
- decode every attribute: names come from the EIATTR numbering cuobjdump prints (the tests check
  the names against `cuobjdump -elf` for every record in the shipped and test cubins).
"""

from __future__ import annotations

import os
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cudal2.harness.cubin import CubinError as HarnessCubinError
from cudal2.harness.cubin import Section, sections
from cudal2.sass import tools

WORD = 16  # bytes per instruction on sm_70 and later

# EIATTR codes as cuobjdump names them (first byte is the format, second the code).
EIATTR = {
    0x01: "PAD", 0x02: "IMAGE_SLOT", 0x03: "JUMPTABLE_RELOCS", 0x04: "CTAIDZ_USED", 0x05: "MAX_THREADS",
    0x06: "IMAGE_OFFSET", 0x07: "IMAGE_SIZE", 0x08: "TEXTURE_NORMALIZED", 0x09: "SAMPLER_INIT",
    0x0A: "PARAM_CBANK", 0x0B: "SMEM_PARAM_OFFSETS", 0x0C: "CBANK_PARAM_OFFSETS", 0x0D: "SYNC_STACK",
    0x0E: "TEXID_SAMPID_MAP", 0x0F: "EXTERNS", 0x10: "REQNTID", 0x11: "FRAME_SIZE", 0x12: "MIN_STACK_SIZE",
    0x13: "SAMPLER_FORCE_UNNORMALIZED", 0x14: "BINDLESS_IMAGE_OFFSETS", 0x15: "BINDLESS_TEXTURE_BANK",
    0x16: "BINDLESS_SURFACE_BANK", 0x17: "KPARAM_INFO", 0x18: "SMEM_PARAM_SIZE", 0x19: "CBANK_PARAM_SIZE",
    0x1A: "QUERY_NUMATTRIB", 0x1B: "MAXREG_COUNT", 0x1C: "EXIT_INSTR_OFFSETS", 0x1D: "S2RCTAID_INSTR_OFFSETS",
    0x1E: "CRS_STACK_SIZE", 0x1F: "NEED_CNP_WRAPPER", 0x20: "NEED_CNP_PATCH", 0x21: "EXPLICIT_CACHING",
    0x22: "ISTYPEP_USED", 0x23: "MAX_STACK_SIZE", 0x24: "SUQ_USED", 0x25: "LD_CACHEMOD_INSTR_OFFSETS",
    0x26: "LOAD_CACHE_REQUEST", 0x27: "ATOM_SYS_INSTR_OFFSETS", 0x28: "COOP_GROUP_INSTR_OFFSETS",
    0x29: "COOP_GROUP_MASK_REGIDS", 0x2A: "SW1850030_WAR", 0x2B: "WMMA_USED", 0x2C: "HAS_PRE_V10_OBJECT",
    0x2D: "ATOMF16_EMUL_INSTR_OFFSETS", 0x2E: "ATOM16_EMUL_INSTR_REG_MAP", 0x2F: "REGCOUNT",
    0x30: "SW2393858_WAR", 0x31: "INT_WARP_WIDE_INSTR_OFFSETS", 0x32: "SHARED_SCRATCH", 0x33: "STATISTICS",
    0x34: "INDIRECT_BRANCH_TARGETS", 0x35: "SW2861232_WAR", 0x36: "SW_WAR", 0x37: "CUDA_API_VERSION",
    0x38: "NUM_MBARRIERS", 0x39: "MBARRIER_INSTR_OFFSETS", 0x3A: "COROUTINE_RESUME_OFFSETS",
    0x3B: "SAM_REGION_STACK_SIZE", 0x3C: "PER_REG_TARGET_PERF_STATS", 0x3D: "CTA_PER_CLUSTER",
    0x3E: "EXPLICIT_CLUSTER", 0x3F: "MAX_CLUSTER_RANK", 0x40: "INSTR_REG_MAP", 0x41: "RESERVED_SMEM_USED",
    0x42: "RESERVED_SMEM_0_SIZE", 0x43: "UCODE_SECTION_DATA", 0x44: "UNUSED_LOAD_BYTE_OFFSET",
    0x45: "KPARAM_INFO_V2", 0x46: "SYSCALL_OFFSETS", 0x47: "SW_WAR_MEMBAR_SYS_INSTR_OFFSETS",
    0x48: "GRAPHICS_GLOBAL_CBANK", 0x49: "SHADER_TYPE", 0x4A: "VRC_CTA_INIT_COUNT", 0x4B: "TOOLS_PATCH_FUNC",
    0x4C: "NUM_BARRIERS", 0x4D: "TEXMODE_INDEPENDENT", 0x4E: "PERF_STATISTICS", 0x4F: "AT_ENTRY_FRAGMENTS",
    0x50: "SPARSE_MMA_MASK", 0x51: "TCGEN05_1CTA_USED", 0x52: "TCGEN05_2CTA_USED", 0x53: "GEN_ERRBAR_AT_EXIT",
    0x54: "REG_RECONFIG", 0x55: "ANNOTATIONS", 0x57: "STACK_CANARY_TRAP_OFFSETS",
    0x59: "LOCAL_CTA_ASYNC_STORE_OFFSETS", 0x5B: "BLOCKS_ARE_CLUSTERS", 0x5F: "MERCURY_ISA_VERSION",
}

# Records whose payload lists text offsets: the instructions there must not move. The payload is
# u32 offsets, except where OFFSET_STRIDE says each offset opens a longer record (MBARRIER: 16
# bytes per mbarrier instruction, the offset first; cuobjdump 13.2 prints nothing for it, and the
# offsets decoded this way land on SYNCS instructions in the test kernel).
OFFSET_LISTS = {
    "EXIT_INSTR_OFFSETS", "S2RCTAID_INSTR_OFFSETS", "LD_CACHEMOD_INSTR_OFFSETS", "ATOM_SYS_INSTR_OFFSETS",
    "COOP_GROUP_INSTR_OFFSETS", "ATOMF16_EMUL_INSTR_OFFSETS", "INT_WARP_WIDE_INSTR_OFFSETS",
    "MBARRIER_INSTR_OFFSETS", "SW_WAR_MEMBAR_SYS_INSTR_OFFSETS", "STACK_CANARY_TRAP_OFFSETS",
    "LOCAL_CTA_ASYNC_STORE_OFFSETS",
}
OFFSET_STRIDE = {"MBARRIER_INSTR_OFFSETS": 16}

# Records known to hold no instruction offset (sizes, counts, parameter layout, flags). Only what
# has been seen in our cubins or is plainly a scalar; anything else makes the kernel unpatchable.
HARMLESS = {
    "REGCOUNT", "FRAME_SIZE", "MIN_STACK_SIZE", "MAX_STACK_SIZE", "CRS_STACK_SIZE", "CUDA_API_VERSION",
    "KPARAM_INFO", "KPARAM_INFO_V2", "SPARSE_MMA_MASK", "MAXREG_COUNT", "NUM_BARRIERS", "NUM_MBARRIERS",
    "MERCURY_ISA_VERSION", "MAX_THREADS", "REQNTID", "CBANK_PARAM_SIZE", "PARAM_CBANK", "SW_WAR",
    "CTAIDZ_USED", "CTA_PER_CLUSTER", "EXPLICIT_CLUSTER", "MAX_CLUSTER_RANK", "BLOCKS_ARE_CLUSTERS",
    "RESERVED_SMEM_USED", "RESERVED_SMEM_0_SIZE", "WMMA_USED", "EXTERNS",
    "COOP_GROUP_MASK_REGIDS",  # one mask register id per COOP_GROUP offset; those never move, registers never change
    "REG_RECONFIG",            # a flag record (no value): the kernel uses setmaxnreg (the sm90raw family)
}

FMT_SVAL = 0x04  # u16 size, then that many bytes; every other format is a 4-byte record


class CubinError(ValueError):
    """Not an ELF this module can read, or a patch it cannot apply."""


@dataclass(frozen=True)
class Attr:
    fmt: int
    code: int
    payload: bytes          # SVAL: the bytes; other formats: the 2-byte value

    @property
    def name(self) -> str:
        return EIATTR.get(self.code, f"0x{self.code:02x}")

    def u32s(self) -> list[int]:
        n = len(self.payload) // 4
        return list(struct.unpack_from(f"<{n}I", self.payload)) if n else []

    def offsets(self) -> list[int]:
        """The text offsets an offset-list record names (see OFFSET_STRIDE)."""
        step = OFFSET_STRIDE.get(self.name, 4) // 4
        return self.u32s()[::step]


@dataclass
class Kernel:
    name: str
    text: Section
    attrs: list[Attr] = field(default_factory=list)      # from .nv.info.<name>
    pinned: dict[int, list[str]] = field(default_factory=dict)  # text offset -> reasons
    relocations: list[int] = field(default_factory=list)  # text offsets that relocations name
    unknown: list[str] = field(default_factory=list)     # records that make the kernel unpatchable

    @property
    def n_instructions(self) -> int:
        return self.text.size // WORD


@dataclass
class Cubin:
    data: bytes
    sections: list[Section]
    kernels: dict[str, Kernel]
    global_attrs: list[Attr]

    @classmethod
    def read(cls, path: str | os.PathLike) -> "Cubin":
        return cls.from_bytes(Path(path).read_bytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> "Cubin":
        data = bytes(data)
        sections = _sections(data)
        by_name = {s.name: s for s in sections}
        global_attrs = _attrs(data, by_name[".nv.info"]) if ".nv.info" in by_name else []
        kernels = {}
        for s in sections:
            if not s.name.startswith(".text."):
                continue
            k = Kernel(name=s.name[len(".text."):], text=s)
            if s.size % WORD:
                k.unknown.append(f"text size {s.size} is not a multiple of {WORD}")
            info = by_name.get(".nv.info." + k.name)
            k.attrs = _attrs(data, info) if info else []
            for a in k.attrs:
                _classify(k, a)
            for a in global_attrs:  # the global records name kernels by symbol; none of ours hold offsets
                if a.name not in HARMLESS:
                    k.unknown.append(f"global .nv.info record {a.name}")
            for rel in (by_name.get(".rela" + s.name), by_name.get(".rel" + s.name)):
                if rel is not None and rel.size:
                    entsize = rel.entsize or (24 if rel.type == 4 else 16)
                    for j in range(rel.size // entsize):
                        off, = struct.unpack_from("<Q", data, rel.offset + j * entsize)
                        k.relocations.append(off)
                        k.pinned.setdefault(off - off % WORD, []).append("relocation")
            kernels[k.name] = k
        return cls(data=data, sections=sections, kernels=kernels, global_attrs=global_attrs)

    def text(self, kernel: str) -> bytes:
        s = self.kernels[kernel].text
        return self.data[s.offset:s.offset + s.size]

    def words(self, kernel: str) -> list[bytes]:
        t = self.text(kernel)
        return [t[i:i + WORD] for i in range(0, len(t), WORD)]

    def with_text(self, kernel: str, text: bytes) -> bytes:
        s = self.kernels[kernel].text
        if len(text) != s.size:
            raise CubinError(f"{kernel}: new text is {len(text)} bytes, the section holds {s.size}")
        return self.data[:s.offset] + bytes(text) + self.data[s.offset + s.size:]


def _sections(data: bytes) -> list[Section]:
    try:
        return sections(data)
    except HarnessCubinError as e:
        raise CubinError(str(e)) from None


def _attrs(data: bytes, s: Section) -> list[Attr]:
    out, pos, end = [], s.offset, s.offset + s.size
    while pos + 4 <= end:
        fmt, code = data[pos], data[pos + 1]
        if fmt == FMT_SVAL:
            n, = struct.unpack_from("<H", data, pos + 2)
            out.append(Attr(fmt, code, data[pos + 4:pos + 4 + n]))
            pos += 4 + n
        else:
            out.append(Attr(fmt, code, data[pos + 2:pos + 4]))
            pos += 4
    if pos != end:
        raise CubinError(f"{s.name}: records overrun the section ({pos - s.offset} of {s.size} bytes)")
    return out


def _classify(k: Kernel, a: Attr) -> None:
    if a.name in HARMLESS:
        return
    if a.name in OFFSET_LISTS and a.fmt == FMT_SVAL and len(a.payload) % OFFSET_STRIDE.get(a.name, 4) == 0:
        offs = a.offsets()
        if all(o % WORD == 0 and o < k.text.size for o in offs):
            for o in offs:
                k.pinned.setdefault(o, []).append(a.name)
            return
        k.unknown.append(f"{a.name} holds offsets outside the text: {offs[:8]}")
        return
    k.unknown.append(f".nv.info record {a.name} (format {a.fmt})")


def is_elf(data: bytes) -> bool:
    return data[:4] == b"\x7fELF"


def extract(data: bytes) -> list[bytes]:
    """The ELF cubins inside `data`: itself if it is one, else what `cuobjdump -xelf all` finds."""
    if is_elf(data) and any(s.name.startswith(".text.") for s in _sections(data)) and \
            struct.unpack_from("<H", data, 0x12)[0] == 190:  # EM_CUDA: a cubin, not a host .so
        return [data]
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "input.bin")
        Path(src).write_bytes(data)
        subprocess.run([tools.require("cuobjdump"), "-xelf", "all", src], cwd=d, capture_output=True, timeout=120,
                       check=True)
        return [Path(d, f).read_bytes() for f in sorted(os.listdir(d)) if f.endswith(".cubin")]
