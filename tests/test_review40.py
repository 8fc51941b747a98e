"""Review 40: candidate input that stopped the reward service or stalled it in the machine-code
rules (see each test)."""

import functools
import time

import pytest

from cudal2.harness import constbank
from cudal2.harness.build import build
from cudal2.sass import disasm, tools

from .conftest import KERNELS

BAD = KERNELS / "bad"


def _sleeper(tmp_path):
    """A stand-in for nvdisasm that never answers in time."""
    exe = tmp_path / "nvdisasm"
    exe.write_text("#!/bin/sh\nsleep 30\n")
    exe.chmod(0o755)
    return str(exe)


def test_a_tool_past_its_timeout_is_a_tool_failure_not_an_exception(tmp_path, monkeypatch):
    # subprocess.TimeoutExpired is no OSError and no ToolFailed: no rule's `except UNREADABLE` saw it
    monkeypatch.setattr(tools, "require", lambda name: _sleeper(tmp_path))
    t0 = time.monotonic()
    with pytest.raises(tools.ToolFailed, match=tools.TIMED_OUT):
        tools.run("nvdisasm", ["x.cubin"], timeout=0.5)
    assert time.monotonic() - t0 < 10


@pytest.mark.timeout(120)
def test_a_disassembler_past_its_timeout_refuses_the_build_uncached(cfg, tmp_path, monkeypatch):
    src = (KERNELS / "good" / "naive_v2.cu").read_text()
    assert build(src, cfg.build).ok
    cfg.build.cache_dir = str(tmp_path / "other-cache")   # a fresh build, not the cached verdict
    monkeypatch.setattr(tools, "require", lambda name: _sleeper(tmp_path))
    monkeypatch.setattr(tools, "run", functools.partial(tools.run, timeout=0.5))
    r = build(src, cfg.build)   # before: subprocess.TimeoutExpired out of build()
    assert not r.ok and r.stage == "build" and tools.TIMED_OUT in r.reason
    assert not (tmp_path / "other-cache" / r.key).exists()   # a busy machine's refusal is not kept


def test_a_cubin_past_max_words_is_refused_before_nvdisasm_runs(cfg, monkeypatch):
    r = build((KERNELS / "good" / "naive_v2.cu").read_text(), cfg.build)
    assert r.ok
    words = sum(k.text.size for k in disasm.Cubin.read(r.lib_path).kernels.values()) // disasm.WORD

    def never(*a, **k):
        raise AssertionError("nvdisasm ran on a cubin past the cap")
    monkeypatch.setattr(tools, "run", never)
    monkeypatch.setattr(disasm, "MAX_WORDS", words - 1)
    with pytest.raises(disasm.DisasmError, match="instruction words"):
        disasm.disassemble(open(r.lib_path, "rb").read())
    assert any("instruction words" in b for b in constbank.violations(r.lib_path))


@pytest.mark.timeout(300)
def test_the_superlinear_listing_kernel_fails_the_build_within_seconds(cfg):
    # before: nvdisasm -plr ran ~4 minutes on its 65,568 words, was killed at 60 s, and
    # subprocess.TimeoutExpired came out of build() (and build_many, and RewardService.score)
    t0 = time.monotonic()
    r = build((BAD / "zz40_nvdisasm_superlinear.cu").read_text(), cfg.build)
    assert not r.ok and r.stage == "build" and "instruction words" in r.reason
    assert time.monotonic() - t0 < 60
