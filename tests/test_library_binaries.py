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


def _judged_requests(monkeypatch):
    """Capture what reaches the judge (no GPU here): the requests, in order."""
    from cudal2.harness.evaluate import Evaluator
    seen = []
    monkeypatch.setattr(Evaluator, "judge_request", lambda self, r, worker, req: seen.append(req))
    return seen


def test_library_verify_judges_the_shipped_cubin_not_a_rebuild(small_lib, monkeypatch):
    from rich.console import Console

    from cudal2.config import Config
    from cudal2.library import Library
    from cudal2.library.bench import verify_entries
    seen = _judged_requests(monkeypatch)
    lib = Library(small_lib, serve_margin=None)
    verify_entries(lib, Config(), "test-gpu", Console(quiet=True))
    assert [Path(q.binary) for q in seen] == [small_lib / e.binary for e in lib.entries]
    assert all(q.kind == "cubin" and not q.time_it for q in seen)


def test_a_cubin_the_binary_rules_refuse_fails_at_build_before_the_judge(small_lib, monkeypatch):
    from cudal2.config import Config
    from cudal2.harness.evaluate import Evaluator
    from cudal2.problem import Problem
    from cudal2.result import Stage
    seen = _judged_requests(monkeypatch)
    e = manifest.read(small_lib)[0]
    bad = small_lib / "edited.cubin"
    bad.write_bytes((small_lib / e.binary).read_bytes()[:200])   # cut: no kernel the spec names
    r = Evaluator(Config()).judge_cubin(bad, e.id, e.spec, (small_lib / e.source).read_text(), Problem(e.M, e.N, e.K))
    assert r.stage is Stage.BUILD and not r.ok and "cubin" in r.reason and seen == []


def test_a_cubin_judged_at_a_shape_its_source_does_not_claim_fails_at_load(small_lib, monkeypatch):
    from cudal2.config import Config
    from cudal2.harness.evaluate import Evaluator
    from cudal2.problem import Problem
    from cudal2.result import Stage
    seen = _judged_requests(monkeypatch)
    e = manifest.read(small_lib)[0]
    r = Evaluator(Config()).judge_cubin(small_lib / e.binary, e.id, e.spec, (small_lib / e.source).read_text(),
                                        Problem(e.M + 1, e.N, e.K))
    assert r.stage is Stage.LOAD and "does not declare" in r.reason and seen == []


def test_an_implausibly_fast_cubin_is_judged_again_as_a_built_source_is(small_lib, monkeypatch):
    from cudal2.config import Config
    from cudal2.harness.evaluate import Evaluator
    from cudal2.problem import Problem

    def verified(self, r, worker, req):
        r.ok = True
    again = []
    monkeypatch.setattr(Evaluator, "judge_request", verified)
    monkeypatch.setattr(Evaluator, "_implausible", lambda self, r, p: True)
    monkeypatch.setattr(Evaluator, "_rejudge", lambda self, r, req: again.append(req.binary))
    e = manifest.read(small_lib)[0]
    Evaluator(Config()).judge_cubin(small_lib / e.binary, e.id, e.spec, (small_lib / e.source).read_text(),
                                    Problem(e.M, e.N, e.K), time_it=True)
    assert again == [str(small_lib / e.binary)]
