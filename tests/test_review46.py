"""Review 46: what a candidate, or a library folder, reached past the rules (see each section).
Each test is one adversarial property; each failed on the code before the review."""

import dataclasses
import shutil
import time

import pytest

from cudal2.harness import build

from .conftest import BAD, KERNELS, needs_nvcc

NAIVE = (KERNELS / "good" / "naive_v2.cu").read_text()


# --- PTX the build reads into its caller's process --------------------------------------------
# An inline asm statement of PTX comment lines, unrolled under a branch never taken: nvcc writes
# tens or hundreds of MB of PTX in seconds with little memory; the build read it whole into the
# caller's process (the trainer's, in the reward service) and scanned it in Python, outside every
# timeout, and the kernel then built and passed (comments assemble to nothing).

@needs_nvcc
@pytest.mark.timeout(300)
def test_the_ptx_comment_bomb_fails_the_build_before_its_ptx_is_read(cfg, monkeypatch):
    from cudal2.harness import cubin
    read = []
    monkeypatch.setattr(cubin, "canonical_ptx", lambda text: read.append(len(text)) or text)
    t0 = time.monotonic()
    res = build.build((BAD / "zz46_ptx_comment_bomb.cu").read_text(), cfg.build)
    assert not res.ok and res.stage == "build" and "MiB of PTX" in res.reason
    assert read == []                       # never read into this process
    assert time.monotonic() - t0 < 60


@needs_nvcc
@pytest.mark.timeout(300)
def test_a_failed_ptx_bomb_leaves_no_ptx_in_the_cache(cfg):
    res = build.build((BAD / "zz46_ptx_comment_bomb.cu").read_text(), cfg.build)
    folder = build.cache_root(cfg.build) / res.key
    assert sorted(p.name for p in folder.iterdir()) == ["build.json", "build.log", "kernel.cu"]


@needs_nvcc
@pytest.mark.timeout(300)
def test_an_honest_kernels_ptx_is_far_under_the_limit(cfg):
    for name in ("naive_v2.cu", "tma_v2.cu"):
        res = build.build((KERNELS / "good" / name).read_text(), cfg.build)
        assert res.ok, res.reason
