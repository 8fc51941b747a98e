"""The register probe (eval/register_probe.py) can do what it claims: its `peek` kernel's wgmma
reads accumulator registers that no instruction of `peek` wrote, and its `leave` kernel writes
every register ptxas allots at 32 (R0..R29). Read from the SASS nvcc emits, on the CPU."""

import subprocess
from pathlib import Path

import pytest

from cudal2.sass import disasm

SRC = Path(__file__).parent / "kernels" / "probe" / "register_peek.cu"


@pytest.fixture(scope="module")
def listings(tmp_path_factory):
    out = tmp_path_factory.mktemp("peek") / "peek.cubin"
    subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-O3", "-o", str(out), str(SRC)], check=True, capture_output=True)
    return disasm.disassemble(out.read_bytes())


def test_peek_reads_accumulators_it_never_wrote(listings):
    instrs = listings["peek"].instrs
    mma = next(i for i, x in enumerate(instrs) if x.base == "HGMMA")
    written = set().union(*(x.writes for x in instrs[:mma]))
    acc = {r for r in instrs[mma].reads if r.startswith("R")} - written
    assert len(acc) == 16


def test_leave_writes_every_allotted_register(listings):
    written = set().union(*(x.writes for x in listings["leave"].instrs if x.pred in ("", "@PT")))
    assert {f"R{i}" for i in range(30)} <= written
