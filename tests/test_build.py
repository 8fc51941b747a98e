"""Real nvcc builds: good kernels build with their resource report, bad ones fail with the error kept."""

import dataclasses
import shutil

import pytest

from cudal2.harness.build import build, build_key, build_many, parse_ptxas

from .conftest import KERNELS

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

GOOD = (KERNELS / "good" / "naive.cu").read_text()


def test_good_kernel_builds_with_resource_report(cfg):
    r = build(GOOD, cfg.build)
    assert r.ok and r.lib_path.endswith(".so")
    (entry,) = r.resources.values()
    assert entry["registers"] > 0 and entry["spill_stores"] == 0


def test_compile_error_is_captured(cfg):
    r = build((KERNELS / "bad" / "syntax_error.cu").read_text(), cfg.build)
    assert not r.ok and r.stage == "build"
    assert "error" in r.reason and "error" in r.log


def test_policy_violation_is_never_compiled(cfg):
    r = build((KERNELS / "bad" / "sync_device.cu").read_text(), cfg.build)
    assert not r.ok and r.stage == "policy" and "sync" in r.reason
    assert not (cfg and r.lib_path)


def test_second_build_is_a_cache_hit(cfg):
    first = build(GOOD, cfg.build)
    again = build(GOOD, cfg.build)
    assert not first.cached and again.cached and again.lib_path == first.lib_path


def test_cache_key_follows_flags(cfg):
    other = dataclasses.replace(cfg.build, flags=["-O2", "-std=c++17"])
    assert build_key(GOOD, cfg.build) != build_key(GOOD, other)


def test_build_timeout_kills_and_fails(cfg):
    quick = dataclasses.replace(cfg.build, timeout_s=0.05)
    r = build(GOOD + "\n// timeout variant\n", quick)
    assert not r.ok and "timed out" in r.reason


def test_parallel_builds_keep_input_order(cfg):
    srcs = [GOOD + f"\n// variant {i}\n" for i in range(3)] + ["not c++"]
    rs = build_many(srcs, cfg.build)
    assert [r.ok for r in rs] == [True, True, True, False]


def test_ptxas_report_parses_spills():
    log = ("ptxas info    : Compiling entry function '_Z1kv' for 'sm_90a'\n"
           "ptxas info    : Function properties for _Z1kv\n"
           "    64 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
           "ptxas info    : Used 255 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]\n")
    assert parse_ptxas(log) == {"_Z1kv@sm_90a": {"stack": 64, "spill_stores": 8, "spill_loads": 12,
                                                 "registers": 255, "barriers": 1, "smem": 1024}}


def test_cache_key_names_the_cutlass_version_not_its_folder(cfg, tmp_path, monkeypatch):
    # A cache warmed on one machine must hit on another where the same wheel sits in another folder.
    from cudal2.harness import build as build_mod
    before = build_key(GOOD, cfg.build)
    for where, version in (("a", "#define CUTLASS_MAJOR 4\n"), ("b", "#define CUTLASS_MAJOR 4\n"), ("c", "#define CUTLASS_MAJOR 5\n")):
        (tmp_path / where / "cutlass").mkdir(parents=True)
        (tmp_path / where / "cutlass" / "version.h").write_text(version)
    keys = {}
    for where in "abc":
        monkeypatch.setattr(build_mod, "cutlass_include", lambda w=where: str(tmp_path / w))
        build_mod.cutlass_version.cache_clear()
        keys[where] = build_key(GOOD, cfg.build)
    build_mod.cutlass_version.cache_clear()
    assert keys["a"] == keys["b"] != keys["c"]
    monkeypatch.undo()
    assert build_key(GOOD, cfg.build) == before
