"""The kernel library on disk: manifest validation, keep-the-better writes, dispatch order."""

import json

import pytest

from cudal2.library import Library, LibraryError, manifest, writer
from cudal2.library.manifest import Entry


def entry(tmp, eid="e1", M=64, N=64, K=64, score=1.1, m_range=None, source="// kernel\n") -> Entry:
    e = Entry(id=eid, M=M, N=N, K=K, family="sm80", params={}, provenance={"kind": "template"},
              source=f"{eid}.cu", source_sha256=manifest.sha256_text(source),
              device_sha256="", build={}, measured={"score": score}, gpu={}, date="2026-11-22", m_range=m_range)
    return e


def put(folder, *entries, source="// kernel\n"):
    folder.mkdir(parents=True, exist_ok=True)
    for e in entries:
        (folder / e.source).write_text(source)
    manifest.write(folder, list(entries))


def test_round_trip(tmp_path):
    e = entry(tmp_path)
    put(tmp_path, e)
    assert manifest.read(tmp_path) == [e]


def test_corrupt_manifest_names_the_file(tmp_path):
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(LibraryError, match="manifest.json"):
        Library(tmp_path)


def test_entry_missing_fields_is_named(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"version": 1, "entries": [{"id": "x"}]}))
    with pytest.raises(LibraryError, match="entry 0"):
        manifest.read(tmp_path)


def test_tampered_source_is_refused(tmp_path):
    put(tmp_path, entry(tmp_path))
    (tmp_path / "e1.cu").write_text("// changed\n")
    with pytest.raises(LibraryError, match="sha256"):
        manifest.read(tmp_path)


def test_missing_source_is_refused(tmp_path):
    put(tmp_path, entry(tmp_path))
    (tmp_path / "e1.cu").unlink()
    with pytest.raises(LibraryError, match="missing"):
        manifest.read(tmp_path)


def test_writer_keeps_the_better_entry(tmp_path):
    assert writer.add(tmp_path, entry(tmp_path, "a", score=1.2), "// kernel\n")
    assert not writer.add(tmp_path, entry(tmp_path, "b", score=1.1), "// kernel\n")
    assert writer.add(tmp_path, entry(tmp_path, "c", score=1.3), "// kernel\n")
    assert [e.id for e in manifest.read(tmp_path)] == ["c"]
    assert not (tmp_path / "a.cu").exists()


def test_lookup_prefers_exact_then_range(tmp_path):
    put(tmp_path, entry(tmp_path, "exact", M=128, N=256, K=64),
        entry(tmp_path, "range", M=None, N=256, K=64, m_range=[1, 4096]))
    lib = Library(tmp_path)
    assert lib.lookup(128, 256, 64).id == "exact"
    assert lib.lookup(100, 256, 64).id == "range"
    assert lib.lookup(100, 512, 64) is None


def test_table_lists_entries(tmp_path):
    put(tmp_path, entry(tmp_path))
    assert list(Library(tmp_path).table["id"]) == ["e1"]


def test_writer_compares_with_the_entry_score_measured_now(tmp_path):
    assert writer.add(tmp_path, entry(tmp_path, "a", score=1.3), "// kernel\n")  # an inflated search score
    assert not writer.add(tmp_path, entry(tmp_path, "b", score=1.1), "// kernel\n")
    assert writer.add(tmp_path, entry(tmp_path, "b", score=1.1), "// kernel\n", rescored={"a": 1.0})
    assert [e.id for e in manifest.read(tmp_path)] == ["b"]
