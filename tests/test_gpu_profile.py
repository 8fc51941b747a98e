"""Nsight Compute on the GPU: one call of a candidate, and of cuBLAS for comparison, reduced to numbers."""

import shutil

import pytest

from cudal2.harness.build import build
from cudal2.harness.profile import CUBLAS, profile

from .conftest import KERNELS

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(shutil.which("ncu") is None, reason="ncu not on PATH")]


def test_candidate_profile_names_its_kernel_and_counts_no_tensor_work(cfg):
    b = build((KERNELS / "good" / "naive.cu").read_text(), cfg.build)
    assert b.ok, b.reason
    s = profile(b.lib_path, 256, 256, 256)["summary"]
    assert s["n_kernels"] == 1 and "naive_gemm" in s["dominant_kernel"]
    assert s["duration_ns"] > 0 and s["tensor_pipe_pct"] < 1  # fmaf on CUDA cores only


def test_cublas_profile_uses_the_tensor_cores():
    s = profile(CUBLAS, 1024, 1024, 1024)["summary"]
    assert s["n_kernels"] >= 1 and s["duration_ns"] > 0
    assert s["tensor_pipe_pct"] > 0, s
