"""The harness's own kernels (the stamp, the register scrubs, the snapshot node) as machine code,
for the tests that read their SASS: built by nvcc's ptxas, or by NVRTC through cupy's binding, which
is what builds them where they run (the judge and the bench load them through cupy's RawModule).
The two compilers may place registers and frames differently, so each property is read from both;
NVRTC's build skips where this machine has none (the test extra installs it)."""

import struct
import subprocess

import pytest

from cudal2.sass import disasm

COMPILERS = ("nvcc", "nvrtc")
# what cupy 14's RawModule adds to a module's own options (review 69 read them off its NVRTC call):
# without them the stamp's build differed from the bench's by a few instructions
CUPY_OPTIONS = ("-ftz=true", "--device-as-default-execution-space")


def whole_elf(data: bytes) -> bytes:
    """A cubin as cupy hands it over, made whole again: cupy's NVRTC binding returns the cubin less
    its last byte (a NUL: it treats it as PTX text; the driver loads it anyway), which nvdisasm
    refuses as "an invalid ELF file" (the GPU run of 2026-12-07). Pads with zeros to the end the
    ELF's own headers declare, never more than a few bytes."""
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    ends = [shoff + shentsize * shnum, phoff + phentsize * phnum]
    ends += [off + size for kind, off, size in (struct.unpack_from("<4xI16xQQ", data, shoff + i * shentsize)
                                                 for i in range(shnum)) if kind != 8]   # (8: NOBITS)
    ends += [off + size for off, size in (struct.unpack_from("<8xQ16xQ", data, phoff + i * phentsize)
                                          for i in range(phnum))]
    missing = max(ends) - len(data)
    assert 0 <= missing <= 8, f"the cubin is {missing} bytes off its declared end"
    return data + bytes(missing)


def _nvrtc(src: str, arch: str, options: tuple[str, ...]) -> bytes:
    try:
        import cuda.pathfinder
        from cupy_backends.cuda.libs import nvrtc
        nvrtc.getVersion()
    except Exception as e:   # (the library is loaded on first use)
        pytest.skip(f"no NVRTC here ({type(e).__name__}): pip install nvidia-cuda-nvrtc")
    prog = nvrtc.createProgram(src, "k.cu", (), ())
    try:
        include = "-I" + cuda.pathfinder.find_nvidia_header_directory("cudart")
        nvrtc.compileProgram(prog, [f"--gpu-architecture={arch}", include, *CUPY_OPTIONS, *options])
        return whole_elf(nvrtc.getCUBIN(prog))
    finally:
        nvrtc.destroyProgram(prog)


def listings(compiler: str, src: str, arch: str, options: tuple[str, ...], tmp) -> dict[str, disasm.Listing]:
    """Every kernel of `src` built for `arch` with `options` by `compiler` (one of COMPILERS)."""
    if compiler == "nvrtc":
        return disasm.disassemble(_nvrtc(src, arch, options))
    (tmp / "k.cu").write_text(src)
    subprocess.run(["nvcc", f"-arch={arch}", "-cubin", "-O3", *options, "-o", str(tmp / "k.cubin"), str(tmp / "k.cu")],
                   check=True, capture_output=True)
    return disasm.disassemble((tmp / "k.cubin").read_bytes())
