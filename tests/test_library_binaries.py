"""Shipped binaries: contract v2 entries carry their cubin, hash-pinned; `cudal2 library build` restores them."""

import shutil
from pathlib import Path

import pytest

from cudal2.config import BuildConfig
from cudal2.library import LibraryError, manifest
from cudal2.library.rebuild import rebuild

ROOT = Path(__file__).resolve().parent.parent / "kernels_out" / "sm90"
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def test_every_v2_library_entry_ships_its_cubin():
    v2 = [e for e in manifest.read(ROOT) if e.family == "sm80"]
    assert v2 and all(e.binary and e.spec and (ROOT / e.binary).is_file() for e in v2)


@pytest.fixture
def small_lib(tmp_path):
    """A copy of the library with two of its v2 entries."""
    entries = [e for e in manifest.read(ROOT) if e.family == "sm80"][:2]
    for e in entries:
        shutil.copy(ROOT / e.source, tmp_path / e.source)
        shutil.copy(ROOT / e.binary, tmp_path / e.binary)
    manifest.write(tmp_path, entries)
    return tmp_path


def test_a_corrupt_binary_is_refused_at_read(small_lib):
    e = manifest.read(small_lib)[0]
    (small_lib / e.binary).write_bytes(b"\x7fELF garbage")
    with pytest.raises(LibraryError, match="device_sha256"):
        manifest.read(small_lib)


def test_a_missing_binary_is_named(small_lib):
    e = manifest.read(small_lib)[0]
    (small_lib / e.binary).unlink()
    with pytest.raises(LibraryError, match="missing"):
        manifest.read(small_lib)


def test_library_build_restores_the_same_bytes(small_lib, tmp_path_factory):
    e = manifest.read(small_lib)[0]
    (small_lib / e.binary).write_bytes(b"corrupt")
    report = rebuild(small_lib, BuildConfig(cache_dir=str(tmp_path_factory.mktemp("cache"))), None)
    assert len(report["shipped"]) == 2 and not report["changed"] and not report["failed"]
    assert (small_lib / e.binary).read_bytes() == (ROOT / e.binary).read_bytes()
    manifest.read(small_lib)  # checks every hash again
