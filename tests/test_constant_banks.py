"""The cubin reader finds a module's `__constant__` bank and the variables in it (what the loader
locates to check between calls), and nothing for a module without constant data."""

import shutil
import subprocess

import pytest

from cudal2.harness.cubin import constant_banks

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

SRC = """
__constant__ float table[64] = {1.0f};
namespace { __constant__ int hidden[8] = {3}; }
extern "C" __global__ void k(float* out) { out[threadIdx.x] = table[threadIdx.x % 64] + hidden[threadIdx.x % 8]; }
"""


def cubin(tmp_path, src: str) -> bytes:
    (tmp_path / "k.cu").write_text(src)
    subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-o", str(tmp_path / "k.cubin"), str(tmp_path / "k.cu")],
                   check=True, capture_output=True)
    return (tmp_path / "k.cubin").read_bytes()


def test_the_bank_and_its_variables_are_found_internal_ones_last(tmp_path):
    (bank,) = constant_banks(cubin(tmp_path, SRC))
    assert bank.section == ".nv.constant3" and bank.size >= 64 * 4 + 8 * 4
    names = [n for n, _ in bank.symbols]
    assert names[0] == "table" and len(names) == 2 and "hidden" in names[1]
    assert all(0 <= off < bank.size for _, off in bank.symbols)


def test_a_module_without_constant_data_has_no_bank(tmp_path):
    assert constant_banks(cubin(tmp_path, SRC.replace("__constant__ float table[64] = {1.0f};", "")
                                .replace("namespace { __constant__ int hidden[8] = {3}; }", "")
                                .replace(" + hidden[threadIdx.x % 8]", "").replace("table[threadIdx.x % 64]", "1.0f"))) == []
