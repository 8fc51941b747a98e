"""The loader checks a module's `__constant__` memory between calls: a kernel that writes it (here
through cvta.const, which the build refuses, compiled around the build to get a writer at all)
is seen, an honest reader is not."""

import subprocess

import pytest

from cudal2.harness.launch import LaunchSpec
from cudal2.harness.module import Module

pytestmark = pytest.mark.gpu

SRC = """
#include <cuda_fp16.h>
__constant__ unsigned table[64] = {7u};
namespace { __constant__ unsigned hidden[4] = {9u}; }
extern "C" __global__ void reader(__half* C) { C[threadIdx.x] = __float2half((float)(table[threadIdx.x] + hidden[0])); }
extern "C" __global__ void writer(__half* C) {
    unsigned long long p;
    asm volatile("cvta.const.u64 %0, table;" : "=l"(p));
    if (threadIdx.x == 0) ((unsigned*)p)[5] += 1u;   // module memory that would outlive the call
    C[threadIdx.x] = __float2half(0.0f);
}
"""


def module(tmp_path, kernel: str, src: str = SRC) -> Module:
    (tmp_path / "k.cu").write_text(src)
    subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-o", str(tmp_path / "k.cubin"), str(tmp_path / "k.cu")],
                   check=True, capture_output=True)
    spec = LaunchSpec.from_dict({"kernels": [{"name": kernel, "grid": [1], "block": [64], "args": ["C"]}]})
    return Module((tmp_path / "k.cubin").read_bytes(), spec, checked=True)


def run(mod: Module) -> int:
    import cupy as cp
    c = cp.zeros(64, dtype=cp.float16)
    assert mod.call(0, 0, c.data.ptr, 1, 64, 8, 0, 0, cp.cuda.get_current_stream().ptr) == 0
    cp.cuda.Device().synchronize()
    return mod.constants_changed()


def test_an_honest_reader_leaves_constant_memory_as_loaded(tmp_path):
    mod = module(tmp_path, "reader")
    try:
        assert run(mod) == 0
    finally:
        mod.close()


def test_a_kernel_that_writes_constant_memory_is_seen(tmp_path):
    mod = module(tmp_path, "writer")
    try:
        assert run(mod) > 0
    finally:
        mod.close()
