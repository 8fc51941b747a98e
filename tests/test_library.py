"""The kernel library on disk: manifest validation, keep-the-better writes, dispatch order."""

import json

import pytest

from cudal2.library import Library, LibraryError, manifest, writer
from cudal2.library.manifest import Entry


def cubin(eid) -> bytes:
    return f"cubin of {eid}".encode()   # the manifest checks bytes against hashes, never loads them here


def entry(tmp, eid="e1", M=64, N=64, K=64, score=1.1, m_range=None, source="// kernel\n") -> Entry:
    e = Entry(id=eid, M=M, N=N, K=K, family="sm80", params={}, provenance={"kind": "template"},
              source=f"{eid}.cu", source_sha256=manifest.sha256_text(source),
              device_sha256=manifest.sha256_bytes(cubin(eid)), build={}, gpu={}, date="2026-11-22", m_range=m_range,
              measured={"score": score, "speedup": {m: {"vendor_default": score} for m in ("offline", "server")}},
              binary=f"{eid}.cubin", spec={"kernels": []})
    return e


def put(folder, *entries, source="// kernel\n"):
    folder.mkdir(parents=True, exist_ok=True)
    for e in entries:
        (folder / e.source).write_text(source)
        (folder / e.binary).write_bytes(cubin(e.id))
    manifest.write(folder, list(entries))


def add(folder, e, rescored=None, margin=0.0) -> bool:
    """writer.add with the entry's cubin, as the search hands over the one the judge loaded."""
    built = folder.parent / f"built-{folder.name}-{e.id}.cubin"
    built.write_bytes(cubin(e.id))
    return writer.add(folder, e, "// kernel\n", rescored, binary=str(built), margin=margin)


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
    assert add(tmp_path, entry(tmp_path, "a", score=1.2))
    assert not add(tmp_path, entry(tmp_path, "b", score=1.1))
    assert add(tmp_path, entry(tmp_path, "c", score=1.3))
    assert [e.id for e in manifest.read(tmp_path)] == ["c"]
    assert not (tmp_path / "a.cu").exists() and not (tmp_path / "a.cubin").exists()
    assert (tmp_path / "c.cubin").read_bytes() == cubin("c")


def test_an_entry_without_a_binary_is_refused_by_name(tmp_path):
    e = entry(tmp_path, "hostcode")
    put(tmp_path, e)
    doc = json.loads((tmp_path / "manifest.json").read_text())
    doc["entries"][0]["binary"] = None   # a contract v1 (host-code) entry, as older libraries held
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(LibraryError, match=r"hostcode.*contract v1"):
        manifest.read(tmp_path)


def test_the_writer_refuses_an_entry_without_its_cubin(tmp_path):
    with pytest.raises(ValueError, match="contract v2"):
        writer.add(tmp_path, entry(tmp_path, "nobin"), "// kernel\n")


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
    assert add(tmp_path, entry(tmp_path, "a", score=1.3))  # an inflated search score
    assert not add(tmp_path, entry(tmp_path, "b", score=1.1))
    assert add(tmp_path, entry(tmp_path, "b", score=1.1), rescored={"a": 1.0})
    assert [e.id for e in manifest.read(tmp_path)] == ["b"]


def losing(tmp, eid, offline, server, **kw):
    e = entry(tmp, eid, **kw)
    e.measured["speedup"] = {"offline": {"vendor_default": offline}, "server": {"vendor_default": server}}
    return e


def test_an_entry_slower_than_the_vendor_in_one_mode_is_not_served(tmp_path):
    put(tmp_path, losing(tmp_path, "loses_server", 1.3, 0.97))
    lib = Library(tmp_path)
    assert lib.served == [] and lib.lookup(64, 64, 64) is None


def test_the_latest_bench_decides_over_the_generating_run(tmp_path):
    e = losing(tmp_path, "won_then", 1.3, 1.3)
    e.measured["bench"] = {"speedup": {"offline": 0.95, "server": 1.1}}
    put(tmp_path, e)
    assert Library(tmp_path).served == []


def test_the_margin_is_required_in_every_mode(tmp_path):
    put(tmp_path, losing(tmp_path, "thin", 1.01, 1.05))
    assert Library(tmp_path, serve_margin=0.02).served == [] and len(Library(tmp_path, serve_margin=0.0).served) == 1


def test_a_loss_is_never_written_into_the_library(tmp_path):
    assert not add(tmp_path, losing(tmp_path, "slow", 0.99, 1.2))
    assert manifest.read(tmp_path) == []


def test_bench_results_go_into_the_manifest(tmp_path):
    from cudal2.library.bench import record_bench
    from cudal2.result import EvalResult, Stage
    put(tmp_path, losing(tmp_path, "e1", 1.3, 1.3))
    r = EvalResult(name="e1", source_hash="", M=64, N=64, K=64, stage=Stage.DONE, ok=True)
    r.speedup = {"offline": {"vendor_default": 0.9}, "server": {"vendor_default": 1.2}}
    assert record_bench(tmp_path, [r]) == 1
    assert manifest.read(tmp_path)[0].speedups() == {"offline": 0.9, "server": 1.2}
    assert Library(tmp_path).served == []


def _bench(folder, name: str, *speedups: float) -> None:
    for x in speedups:
        manifest.record_bench(folder, {name: {"kind": "product", "speedup": {"eager": x, "graph": x}}})


def test_a_loss_in_a_recent_bench_vetoes_a_win(tmp_path):
    put(tmp_path, losing(tmp_path, "noisy", 1.3, 1.3))
    _bench(tmp_path, "noisy", 0.997, 1.035)
    assert Library(tmp_path, serve_margin=0.02).served == []


def test_a_loss_older_than_the_history_no_longer_counts(tmp_path):
    put(tmp_path, losing(tmp_path, "recovered", 1.3, 1.3))
    _bench(tmp_path, "recovered", 0.997, *[1.035] * (manifest.HISTORY + 1))
    assert len(manifest.read(tmp_path)[0].measured["bench_history"]) == manifest.HISTORY
    assert len(Library(tmp_path, serve_margin=0.02).served) == 1


def test_a_failed_recent_bench_vetoes_a_win(tmp_path):
    put(tmp_path, losing(tmp_path, "failed_once", 1.3, 1.3))
    manifest.record_bench(tmp_path, {"failed_once": {"kind": "product", "speedup": {}}})
    _bench(tmp_path, "failed_once", 1.05)
    assert Library(tmp_path, serve_margin=0.02).served == []


def test_the_median_of_the_kept_benches_decides_the_margin(tmp_path):
    # latest 1.015 (under the margin), the two before 1.035: served; the reverse order too
    served = {}
    for name, runs in (("steady", (1.035, 1.035, 1.015)), ("lucky", (1.015, 1.015, 1.035))):
        folder = tmp_path / name
        folder.mkdir()
        put(folder, losing(folder, name, 1.3, 1.3))
        _bench(folder, name, *runs)
        served[name] = len(Library(folder, serve_margin=0.02).served)
    assert served == {"steady": 1, "lucky": 0}


def test_the_shipped_library_serves_only_measured_wins():
    import statistics
    from pathlib import Path
    lib = Library(Path(__file__).resolve().parent.parent / "kernels_out" / "sm90")
    assert lib.served and all("bench" in e.measured for e in lib.entries)
    for e in lib.served:
        kept = [e.measured["bench"]["speedup"]] + [h["speedup"] for h in e.measured.get("bench_history", [])]
        assert min(min(r.values()) for r in kept) >= 1.0, e.id
        assert all(statistics.median(r[m] for r in kept) >= 1.02 for m in kept[0]), e.id


class _SpecBoundModule:
    """A loaded module whose launch spec resolves only up to M = `top` (as a split-K workspace or
    a grid does past some M): what `Library` sees of an honest M-range kernel at a huge M."""

    def __init__(self, top: int):
        self.top = top

    def resolved(self, M, N, K):
        from cudal2.harness.launch import SpecError
        if M > self.top:
            raise SpecError(f"workspace for M={M} is over the limit")
        return []

    def workspace_bytes(self, M, N, K):
        return 0


def _ranged_library(tmp_path, monkeypatch, top=1000):
    put(tmp_path, entry(tmp_path, "wide", M=None, N=256, K=64, score=1.3, m_range=[1, 1 << 20]),
        entry(tmp_path, "narrow", M=None, N=256, K=64, score=1.1, m_range=[1, 1 << 20]))
    lib = Library(tmp_path)
    mods = {"wide": _SpecBoundModule(top), "narrow": _SpecBoundModule(1 << 20)}
    monkeypatch.setattr(lib, "_candidate", lambda e: mods[e.id])
    return lib


def test_an_m_range_entry_that_cannot_launch_at_one_m_declines_only_that_m(tmp_path, monkeypatch):
    lib = _ranged_library(tmp_path, monkeypatch)
    wide = lib.lookup(4096, 256, 64)
    assert lib._launchable(wide, 4096, 256, 64) is None
    assert lib.disabled() == {}
    assert lib.lookup(4096, 256, 64).id == "narrow"   # the next entry serves the declined shape
    assert lib.lookup(512, 256, 64).id == "wide"      # and the rest of the range is still served


def test_the_dispatchers_loader_registers_the_next_entry_at_a_declined_m(tmp_path, monkeypatch):
    from cudal2.library import dispatch
    lib = _ranged_library(tmp_path, monkeypatch)
    got = []
    monkeypatch.setattr(dispatch, "register", lambda ext, eid, mod, M, N, K: got.append((eid, M)))
    assert lib._load_for(4096, 256, 64) and lib._load_for(512, 256, 64)
    assert got == [("narrow", 4096), ("wide", 512)]
    assert lib.disabled() == {}


def test_an_exact_entry_whose_spec_does_not_resolve_at_its_shape_is_disabled(tmp_path, monkeypatch):
    put(tmp_path, entry(tmp_path, "exact", M=2048, N=256, K=64))
    lib = Library(tmp_path)
    monkeypatch.setattr(lib, "_candidate", lambda e: _SpecBoundModule(1000))
    with pytest.warns(UserWarning, match="disabled"):
        assert lib._launchable(lib.lookup(2048, 256, 64), 2048, 256, 64) is None
    assert "exact" in lib.disabled()


def _layout(tmp, eid, tn: float, lt: float, default: float) -> Entry:
    e = entry(tmp, eid, score=default)
    for s in e.measured["speedup"].values():
        s.update(cublas_tn=tn, cublaslt=lt, vendor_default=default)
    return e


def test_a_win_over_the_callers_vendor_is_published_though_nn_on_a_transposed_b_is_faster(tmp_path):
    # cuBLAS NN reads a copy of B transposed outside timing: no caller of F.linear has it
    e = _layout(tmp_path, "beats_tn", 1.05, 1.04, 0.97)
    assert add(tmp_path, e) and [x.id for x in manifest.read(tmp_path)] == ["beats_tn"]


def test_a_published_entry_that_loses_to_vendor_default_is_served_only_after_a_bench(tmp_path):
    put(tmp_path, _layout(tmp_path, "waits", 1.05, 1.04, 0.97))
    assert Library(tmp_path).served == []
    _bench(tmp_path, "waits", 1.04)
    assert len(Library(tmp_path).served) == 1


def test_publishing_needs_the_margin_over_the_faster_of_tn_and_cublaslt(tmp_path):
    built = tmp_path / "built.cubin"
    built.write_bytes(cubin("lt_close"))
    e = _layout(tmp_path, "lt_close", 1.05, 1.01, 1.05)
    assert not writer.add(tmp_path / "lib", e, "// kernel\n", binary=str(built), margin=0.02)
    assert writer.add(tmp_path / "lib", e, "// kernel\n", binary=str(built), margin=0.0)


def _modes(tmp, eid, offline: float, server: float) -> Entry:
    e = entry(tmp, eid, score=(offline * server) ** 0.5)
    for m, v in (("offline", offline), ("server", server)):
        e.measured["speedup"][m] = {"cublas_tn": v, "cublaslt": v, "vendor_default": v}
    return e


def test_publishing_needs_the_margin_in_one_mode_and_no_loss_in_any(tmp_path):
    # 1024x1024x12288 read 1.071 offline / 1.008 server: the product bench decides such an entry
    assert add(tmp_path / "a", _modes(tmp_path, "one_mode", 1.071, 1.008), margin=0.02)
    assert not add(tmp_path / "b", _modes(tmp_path, "loses_server", 1.071, 0.999), margin=0.02)
    assert not add(tmp_path / "c", _modes(tmp_path, "under_margin", 1.015, 1.019), margin=0.02)


def test_an_entry_published_on_one_mode_is_not_served_before_a_product_bench(tmp_path):
    put(tmp_path, _modes(tmp_path, "one_mode", 1.071, 1.008))
    assert Library(tmp_path).served == []
    _bench(tmp_path, "one_mode", 1.05)
    assert len(Library(tmp_path).served) == 1


# ---- a replaced entry the product bench serves waits on standby until the bench decides -------------
def _served(tmp, eid, score, product=1.1):
    e = entry(tmp, eid, score=score)
    e.measured["bench"] = {"kind": "product", "speedup": {"eager": product, "graph": product}}
    return e


def test_replacing_a_served_entry_keeps_it_on_standby(tmp_path):
    put(tmp_path, _served(tmp_path, "old", 1.05))
    assert add(tmp_path, _layout(tmp_path, "new", 1.05, 1.04, 1.08), margin=0.02)
    by_id = {e.id: e for e in manifest.read(tmp_path)}
    assert set(by_id) == {"old", "new"} and by_id["old"].extra[manifest.STANDBY] == "new"
    assert (tmp_path / "old.cu").exists() and (tmp_path / "old.cubin").exists()


def test_replacing_an_entry_the_product_bench_never_served_drops_it(tmp_path):
    put(tmp_path, _served(tmp_path, "old", 1.05, product=0.99))
    assert add(tmp_path, _layout(tmp_path, "new", 1.05, 1.04, 1.08), margin=0.02)
    assert [e.id for e in manifest.read(tmp_path)] == ["new"] and not (tmp_path / "old.cubin").exists()


def test_the_standby_serves_until_its_replacement_is_measured(tmp_path):
    # the replacement beat the judge's vendor_default by too little to serve before a product bench
    put(tmp_path, _served(tmp_path, "old", 0.95))
    assert add(tmp_path, _layout(tmp_path, "new", 1.05, 1.04, 1.01), margin=0.02)
    assert Library(tmp_path).lookup(64, 64, 64).id == "old"
    assert Library(tmp_path, serve_margin=None).lookup(64, 64, 64).id == "new"   # what the bench times


def test_the_bench_does_not_time_a_standby_under_its_own_id():
    from cudal2.library.product_bench import to_measure
    old, new = entry(None, "old"), entry(None, "new")
    old.measured["bench"] = {"kind": "product", "speedup": {"graph": 1.1}}
    old.extra[manifest.STANDBY] = "new"
    assert [e.id for e in to_measure([old, new], new=False)] == ["new"]
    assert [e.id for e in to_measure([old, new], new=True)] == ["new"]


def test_a_replacement_that_serves_removes_the_standby(tmp_path):
    put(tmp_path, _served(tmp_path, "old", 1.05))
    add(tmp_path, _layout(tmp_path, "new", 1.05, 1.04, 1.08), margin=0.02)
    assert manifest.settle(tmp_path, 0.02) == []           # not measured yet: both stay
    _bench(tmp_path, "new", 1.09)
    [line] = manifest.settle(tmp_path, 0.02)
    assert "new serves" in line and [e.id for e in manifest.read(tmp_path)] == ["new"]
    assert not (tmp_path / "old.cu").exists() and not (tmp_path / "old.cubin").exists()


def test_a_replacement_that_does_not_serve_brings_the_standby_back(tmp_path):
    put(tmp_path, _served(tmp_path, "old", 1.05))
    add(tmp_path, _layout(tmp_path, "new", 1.05, 1.04, 1.08), margin=0.02)
    _bench(tmp_path, "new", 1.01)                          # under the margin on the product path
    [line] = manifest.settle(tmp_path, 0.02)
    assert "old is back" in line
    [e] = manifest.read(tmp_path)
    assert e.id == "old" and manifest.STANDBY not in e.extra and Library(tmp_path).lookup(64, 64, 64).id == "old"
    assert not (tmp_path / "new.cubin").exists()


def test_a_second_replacement_keeps_the_proven_standby_not_the_unmeasured_one(tmp_path):
    put(tmp_path, _served(tmp_path, "old", 1.05))
    add(tmp_path, _layout(tmp_path, "mid", 1.05, 1.04, 1.08), margin=0.02)
    add(tmp_path, _layout(tmp_path, "top", 1.05, 1.04, 1.10), margin=0.02)
    by_id = {e.id: e for e in manifest.read(tmp_path)}
    assert set(by_id) == {"old", "top"} and by_id["old"].extra[manifest.STANDBY] == "top"


def test_library_ls_names_a_standby_and_what_replaced_it(tmp_path):
    from rich.console import Console
    from cudal2.report import library_table
    put(tmp_path, _served(tmp_path, "old", 1.05))
    add(tmp_path, _layout(tmp_path, "new", 1.05, 1.04, 1.08), margin=0.02)
    con = Console(width=300, record=True)
    con.print(library_table(Library(tmp_path)))
    assert "old (standby for new)" in con.export_text()
