"""The bench's stamp kernel (library/stamp.py) builds, and draws its keys from both clocks when it
runs: read from the SASS that nvcc's ptxas emits for its source (the bench builds it with NVRTC)."""

import subprocess

import pytest

pytest.importorskip("cupy")
from cudal2.harness import guards  # noqa: E402
from cudal2.library import stamp  # noqa: E402
from cudal2.sass import disasm  # noqa: E402

from .test_snapshots_sass import _after_the_loop  # noqa: E402


def test_the_stamp_reads_the_global_timer_and_the_sm_clock(tmp_path):
    (tmp_path / "s.cu").write_text(stamp.source())
    subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-O3", "-o", str(tmp_path / "s.cubin"), str(tmp_path / "s.cu")],
                   check=True, capture_output=True)
    listing = disasm.disassemble((tmp_path / "s.cubin").read_bytes())["cudal2_stamp"]
    sources = {op for x in listing.instrs if x.opcode in ("S2R", "CS2R", "S2UR") for op in x.operands[1:]}
    assert "SR_GLOBALTIMERLO" in sources and "SR_CLOCKLO" in sources


def test_a_tensor_gets_one_block_per_share_and_at_most_the_logged_keys():
    assert stamp.blocks(1) == 1 and stamp.blocks(16 * 4096) == 8 and stamp.blocks(1 << 30) == stamp.MAX_BLOCKS


@pytest.fixture(scope="module")
def listings(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("stamp")
    (d / "s.cu").write_text(stamp.source())
    subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-O3", "-o", str(d / "s.cubin"), str(d / "s.cu")],
                   check=True, capture_output=True)
    return disasm.disassemble((d / "s.cubin").read_bytes())


def test_neither_kernel_puts_its_parameters_in_local_memory(listings):
    # review 67: `cells.at[threadIdx.x]` made ptxas copy the cells' places into a local frame in
    # every thread, where the next launch read them (the bench scrubs no local memory); the only
    # local words left are the stamp's closing wash (under a key of its secret)
    local = ("STL", "LDL")
    assert not [x for x in listings["cudal2_cells"].instrs if x.base in local]
    tail = _after_the_loop(listings["cudal2_stamp"])
    assert not [x for x in listings["cudal2_stamp"].instrs[:tail[0].index] if x.base in local]


def test_the_stamp_ends_by_rewriting_its_registers(listings):
    # block 0's threads held the addresses of W's cells, and the call right after reads registers
    # it never wrote: the wash rewrites the whole 32-register allotment but the stack pointer
    stamp_ = listings["cudal2_stamp"]
    written = set().union(*(x.writes for x in _after_the_loop(stamp_) if x.pred in ("", "@PT")))
    assert {f"R{i}" for i in range(guards.REG_WORDS) if i != 1} <= written, sorted(written)
    regs = {int(r[1:]) for x in stamp_.instrs for r in x.writes | x.reads if r.startswith("R") and r[1:].isdigit()}
    assert max(regs) < 32
    assert "wash_registers(0," not in stamp.source()   # review 68: words of key 0 told a stamped call
