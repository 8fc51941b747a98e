"""The bench's stamp kernel (library/stamp.py) builds, and draws its keys from both clocks when it
runs: read from the SASS that nvcc's ptxas emits for its source (the bench builds it with NVRTC)."""

import subprocess

import pytest

pytest.importorskip("cupy")
from cudal2.library import stamp  # noqa: E402
from cudal2.sass import disasm  # noqa: E402


def test_the_stamp_reads_the_global_timer_and_the_sm_clock(tmp_path):
    (tmp_path / "s.cu").write_text(stamp.source())
    subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-O3", "-o", str(tmp_path / "s.cubin"), str(tmp_path / "s.cu")],
                   check=True, capture_output=True)
    listing = disasm.disassemble((tmp_path / "s.cubin").read_bytes())["cudal2_stamp"]
    sources = {op for x in listing.instrs if x.opcode in ("S2R", "CS2R", "S2UR") for op in x.operands[1:]}
    assert "SR_GLOBALTIMERLO" in sources and "SR_CLOCKLO" in sources


def test_a_tensor_gets_one_block_per_share_and_at_most_the_logged_keys():
    assert stamp.blocks(1) == 1 and stamp.blocks(16 * 4096) == 8 and stamp.blocks(1 << 30) == stamp.MAX_BLOCKS


def test_no_thread_of_the_stamp_or_the_cells_kernel_copies_its_parameters_to_local_memory(tmp_path):
    # review 67: `cells.at[threadIdx.x]` made ptxas copy the cells' places into a 16-byte local frame
    # in every thread, where the next launch read them back (the bench scrubs no local memory)
    (tmp_path / "s.cu").write_text(stamp.source())
    subprocess.run(["nvcc", "-arch=sm_90a", "-ptx", "-O3", "-o", str(tmp_path / "s.ptx"), str(tmp_path / "s.cu")],
                   check=True, capture_output=True)
    ptx = (tmp_path / "s.ptx").read_text()
    assert ".entry cudal2_stamp" in ptx and ".entry cudal2_cells" in ptx and ".local" not in ptx
