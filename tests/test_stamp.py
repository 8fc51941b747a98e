"""The bench's stamp kernel (library/stamp.py) builds, draws its keys from both clocks when it runs,
and leaves nothing in local memory, registers or predicates that the call after it could read: read
from the SASS of nvcc's build and of NVRTC's (which builds it in the bench), for sm_90 and sm_90a."""

import secrets

import pytest

pytest.importorskip("cupy")
from cudal2.harness import guards  # noqa: E402
from cudal2.library import stamp  # noqa: E402
from cudal2.sass import disasm  # noqa: E402

from . import harness_builds  # noqa: E402
from .harness_builds import COMPILERS  # noqa: E402
from .test_snapshots_sass import _after_the_loop  # noqa: E402


def test_a_tensor_gets_one_block_per_share_and_at_most_the_logged_keys():
    assert stamp.blocks(1) == 1 and stamp.blocks(4 * stamp.BLOCK) == 1 and stamp.blocks(4 * stamp.BLOCK + 1) == 2
    assert stamp.blocks(16 * 4096) == 64 and stamp.blocks(1 << 30) == stamp.MAX_BLOCKS


@pytest.fixture(scope="module", params=[(c, a) for c in COMPILERS for a in ("sm_90", "sm_90a")], ids="-".join)
def listings(request, tmp_path_factory) -> dict:
    compiler, arch = request.param
    return harness_builds.listings(compiler, stamp.source(), arch, (), tmp_path_factory.mktemp("stamp"))


def test_the_stamp_reads_the_global_timer_and_the_sm_clock(listings):
    listing = listings["cudal2_stamp"]
    sources = {op for x in listing.instrs if x.opcode in ("S2R", "CS2R", "S2UR") for op in x.operands[1:]}
    assert "SR_GLOBALTIMERLO" in sources and "SR_CLOCKLO" in sources


def local_before_the_wash(listings: dict) -> list:
    """Local loads and stores of the cells kernel, and of the stamp before its closing wash."""
    local = ("STL", "LDL")
    tail = _after_the_loop(listings["cudal2_stamp"])
    return ([x for x in listings["cudal2_cells"].instrs if x.base in local]
            + [x for x in listings["cudal2_stamp"].instrs[:tail[0].index] if x.base in local])


def unwashed_registers(listing) -> set[str]:
    """Registers of the 32-register allotment (but the stack pointer R1) that the stamp's tail does
    not rewrite, and any register it uses past R31."""
    written = set().union(*(x.writes for x in _after_the_loop(listing) if x.pred in ("", "@PT")))
    used = {int(r[1:]) for x in listing.instrs for r in x.writes | x.reads if r.startswith("R") and r[1:].isdigit()}
    return ({f"R{i}" for i in range(guards.REG_WORDS) if i != 1} - written) | {f"R{i}" for i in used if i > 31}


def unwashed_predicates(listing) -> set[str]:
    """Predicates P0..P6 that no unpredicated instruction writes after the stamping loop (the
    kernel's longest backward branch) outside every stretch a forward branch may skip: what the
    stamp's exit leaves as its own code left it, in some lanes at least."""
    back = [x for x in listing.instrs if x.base == "BRA" and x.target is not None
            and listing.labels[x.target] < x.offset]
    loop_end = max(back, key=lambda x: x.offset - listing.labels[x.target]).offset
    skipped = set()
    for x in listing.instrs:
        if x.offset > loop_end and x.base == "BRA" and x.target is not None and listing.labels[x.target] > x.offset:
            skipped |= set(range(x.offset + 1, listing.labels[x.target]))
    written = set().union(*(x.writes for x in listing.instrs if x.offset > loop_end and x.offset not in skipped
                            and x.pred in ("", "@PT")))
    return {f"P{i}" for i in range(7)} - written


def test_neither_kernel_puts_its_parameters_in_local_memory(listings):
    # review 67: `cells.at[threadIdx.x]` made ptxas copy the cells' places into a local frame in
    # every thread, where the next launch read them (the bench scrubs no local memory); the only
    # local words left are the stamp's closing wash (under a key of its secret)
    assert not local_before_the_wash(listings)


def test_the_output_mask_keeps_its_key_out_of_local_memory(listings):
    # review 73: the key unmasks the output the feed makes again; only launch parameters and
    # registers (which the register scrub after it rewrites) may hold it
    assert not [x for x in listings["cudal2_mask"].instrs if x.base in ("STL", "LDL")]


def test_the_stamp_ends_by_rewriting_its_registers(listings):
    # block 0's threads held the addresses of W's cells, and the call right after reads registers
    # it never wrote: the wash rewrites the whole 32-register allotment but the stack pointer
    assert not unwashed_registers(listings["cudal2_stamp"])
    assert "wash_registers(0," not in stamp.source()   # review 68: words of key 0 told a stamped call


def test_the_stamp_ends_by_rewriting_its_predicates(listings):
    # review 69: every build left P0 set and P1 clear in every lane at the stamp's exit, which no
    # scrub leaves: a call could read them as "my A was just stamped"
    assert not unwashed_predicates(listings["cudal2_stamp"])


@pytest.mark.gpu
def test_the_stamp_the_bench_loads_has_the_same_properties(monkeypatch):
    # the binary the bench loads: the one cupy would cache for the bench's source (a comment
    # apart, so it is compiled afresh), with cupy's own options and the machine's NVRTC
    from cupy.cuda import compiler
    saved = {}
    save = compiler._kernel_cache_backend.save
    monkeypatch.setattr(compiler._kernel_cache_backend, "save",
                        lambda name, payload, source: (saved.setdefault(name, payload), save(name, payload, source)))
    from cudal2.harness import rawkernels
    fresh = f"\n// the bench's source, built afresh: {secrets.token_hex(8)}\n"   # (never in cupy's cache)
    rawkernels.module(stamp.source() + fresh).get_function("cudal2_stamp")
    (binary,) = saved.values()
    assert binary[:4] == b"\x7fELF", "cupy cached PTX, not a cubin"
    listings = disasm.disassemble(harness_builds.whole_elf(binary))
    assert not local_before_the_wash(listings) and not unwashed_registers(listings["cudal2_stamp"])
    assert not unwashed_predicates(listings["cudal2_stamp"])
