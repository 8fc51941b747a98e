"""Review 52: the compiler's sandbox again (harness/sandbox.py) and where a build's words and verdicts
go next. An include folder of the build's flags the sandbox did not show."""

import dataclasses

import pytest

from cudal2.harness import build, sandbox

from .conftest import NAIVE, needs_nvcc

pytestmark = needs_nvcc


@pytest.fixture(scope="module")
def works(tmp_path_factory) -> None:
    why = sandbox.probe("nvcc", build._include_dirs(), str(tmp_path_factory.mktemp("root")))
    if why:
        pytest.skip(f"no sandbox on this machine: {why}")


def test_an_include_folder_the_build_flags_name_builds_as_it_does_open(works, tmp_path, cfg):
    # -I in build.flags with its headers in build.extra_headers: the sandbox did not show the folder,
    # the probe passed, and every build that included one failed there, cached as the source's verdict
    (tmp_path / "inc" / "zz52").mkdir(parents=True)
    (tmp_path / "inc" / "zz52" / "tile.h").write_text("#define ZZ52_TILE 32\n")
    bcfg = dataclasses.replace(cfg.build, flags=[*cfg.build.flags, "-I", str(tmp_path / "inc")], extra_headers=["zz52/*"])
    src = "#include <zz52/tile.h>\n" + NAIVE
    on, off = (build.build(src, dataclasses.replace(bcfg, sandbox=m, cache_dir=str(tmp_path / m))) for m in ("on", "off"))
    assert on.ok and off.ok and on.device_sha256 == off.device_sha256, on.reason
