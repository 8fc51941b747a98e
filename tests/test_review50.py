"""Review 50: routes by which a v2 kernel file might make nvcc's tools touch a host file past the
include policy. One was real (a PTX `.file` directive from inline asm, stat()ed by ptxas); the
others stop at the build because gcc or cicc refuses them."""

import pytest

from cudal2.harness import cubin, policy

from .conftest import BAD, expected_bad, needs_nvcc

ZZ50 = sorted(n for n in expected_bad() if n.startswith("zz50_"))


def test_a_ptx_file_directive_is_refused():
    ptx = '.version 8.8\n.target sm_90a\n.address_size 64\n\t.file\t7 "/etc/hostname"\n'
    assert any(".file" in v for v in cubin.ptx_violations(ptx))
    assert not any(".file" in v for v in cubin.ptx_violations(ptx.replace(".file", ".loc")))


@pytest.mark.parametrize("name", ZZ50)
def test_the_kernels_pass_the_source_policy(name):
    assert policy.check_device_only((BAD / name).read_text()) == []


@needs_nvcc
@pytest.mark.parametrize("name", ZZ50)
def test_the_kernels_stop_at_their_stage(cfg, name):
    from cudal2.harness.build import build
    r = build((BAD / name).read_text(), cfg.build)
    assert not r.ok and r.stage == expected_bad()[name]["stage"], r.reason
    if name == "zz50_ptx_file_stat.cu":
        assert "ptx: a .file directive" in r.reason, r.reason
