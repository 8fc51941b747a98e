"""`cudal2 sass` and its CPU-side pieces: one-line errors (unknown entry, no shipped cubin, no GPU,
bad options), the GPU entry points of `sass.verify` failing in one line without a GPU, the shapes
an entry is verified at, a `sass` library entry that the manifest reader accepts and whose
recorded schedule replays to its binary, and `play` publishing only what passed the bitwise check.

`judged` and `FakePairedMeasure` below are TEST DOUBLES (made-up speedups and gains): they stand
in for the GPU judge and the GPU timing that `cudal2 sass` runs, and exist only in these tests."""

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudal2 import cli
from cudal2.harness.device import NoGPU
from cudal2.library import manifest, writer
from cudal2.sass import tools, verify
from cudal2.sass.run import SassError, sass_entry, select

runner = CliRunner()
SHIPPED = Path(__file__).parent.parent / "kernels_out" / "sm90"
SM80 = "128x64x12288-sm80-fe873ae88d"        # ships a cubin
NO_GPU = "no NVIDIA GPU found (test)"


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr("cudal2.harness.device.gpu_present", lambda: NO_GPU)
    monkeypatch.setattr("cudal2.sass.verify.gpu_present", lambda: NO_GPU)


def run(*args):
    return runner.invoke(cli.app, ["sass", *args])


def assert_clean_error(res, needle):
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output
    assert len([ln for ln in res.output.splitlines() if ln.strip()]) == 1, res.output


def test_unknown_entry_is_one_line():
    assert_clean_error(run("--entry", "nope"), "no single library entry matches 'nope'")


def test_no_gpu_is_one_line(no_gpu):
    assert_clean_error(run("--entry", SM80), NO_GPU)


@pytest.mark.parametrize("args,needle", [((), "exactly one of --entry ID or --all"),
                                         (("--all", "--entry", SM80), "exactly one of"),
                                         (("--all", "--agent", "bogus"), "--agent 'bogus'"),
                                         (("--all", "--budget-minutes", "0"), "--budget-minutes"),
                                         (("--all", "--arch", "sm70"), "sm70")])
def test_bad_options_are_one_line(args, needle):
    assert_clean_error(run(*args), needle)


def test_all_takes_every_shipped_cubin_sm80_first():
    entries = manifest.read(SHIPPED)
    picked = select(entries, None, True)
    assert {e.id for e in picked} == {e.id for e in entries if e.binary}
    families = [e.family for e in picked]
    assert families == sorted(families, key=lambda f: f != "sm80")
    with pytest.raises(SassError):
        select(entries, None, False)


def test_gpu_entry_points_fail_in_one_line_without_a_gpu(no_gpu):
    data = (SHIPPED / f"{SM80}.cubin").read_bytes()
    e = next(e for e in manifest.read(SHIPPED) if e.id == SM80)
    for call in (lambda: verify.bitwise(data, data, e.spec, [(128, 64, 12288)]),
                 lambda: verify.PairedMeasure(data, e.spec, (128, 64, 12288))):
        with pytest.raises(NoGPU) as info:
            call()
        assert NO_GPU in str(info.value) and "\n" not in str(info.value)


def test_an_exact_shape_entry_is_verified_at_its_shape():
    e = next(e for e in manifest.read(SHIPPED) if e.id == SM80)
    assert verify.verify_shapes(e) == [(128, 64, 12288)]


def sass_library(tmp_path):
    """A library folder holding one `sass` entry made from SM80's cubin (gains from a stub)."""
    from cudal2.result import EvalResult, Stage
    from cudal2.sass import agents
    from cudal2.sass.game import Game
    parent = next(e for e in manifest.read(SHIPPED) if e.id == SM80)
    for f in (parent.source, parent.binary):
        shutil.copy(SHIPPED / f, tmp_path / f)
    manifest.write(tmp_path, [parent])
    data = (tmp_path / parent.binary).read_bytes()
    game = Game(data, lambda b: 0.05, max_latency=32)        # every move "5% faster": a stub, no timing here
    res = agents.greedy(game, agents.Budget(measurements=3), min_gain=0.01)
    new = game.cubin()
    assert res.reproduced and new != data
    judged = EvalResult(name="x", source_hash="", M=parent.M, N=parent.N, K=parent.K, stage=Stage.DONE, ok=True,
                        speedup={m: {"vendor_default": 1.5} for m in ("offline", "server")})
    source = (tmp_path / parent.source).read_text()
    ne = sass_entry(parent, judged, 1.5, source, new, {k: v for k, v in res.to_dict().items() if k != "trace"}, 32)
    path = tmp_path / "new.cubin"
    path.write_bytes(new)
    assert writer.add(tmp_path, ne, source, {parent.id: 1.2}, binary=str(path), margin=0.02)
    return parent, ne, data


@pytest.mark.skipif(tools.find("nvdisasm") is None, reason="nvdisasm missing")
def test_a_sass_entry_is_a_valid_library_entry_that_replays(tmp_path):
    from cudal2.sass.game import replay
    parent, ne, data = sass_library(tmp_path)
    (got,) = manifest.read(tmp_path)                           # validates hashes of source and binary
    assert got.id == ne.id and "-sass-" in got.id and got.provenance["kind"] == "sass"
    assert got.provenance["parent"] == parent.id and got.spec == parent.spec
    assert not (tmp_path / parent.binary).exists()             # the parent's cubin went with the parent
    p = got.provenance
    assert replay(data, p["kernel"], p["orders"], p["max_latency"]) == (tmp_path / got.binary).read_bytes()


@pytest.mark.skipif(tools.find("nvdisasm") is None, reason="nvdisasm missing")
def test_library_build_keeps_a_sass_entry_reordered(tmp_path, cfg):
    # A rebuild from source gives ptxas's order back; the recorded schedule must be applied again.
    from rich.console import Console
    from cudal2.library.rebuild import rebuild
    _, ne, _ = sass_library(tmp_path)
    before = (tmp_path / ne.binary).read_bytes()
    report = rebuild(tmp_path, cfg.build, Console(quiet=True))
    assert report["failed"] == [] and report["shipped"] == [ne.id]
    (got,) = manifest.read(tmp_path)
    assert (tmp_path / got.binary).read_bytes() == before and got.device_sha256 == ne.device_sha256


class FakePairedMeasure:
    """TEST DOUBLE for `verify.PairedMeasure`: every reordered cubin is '3% faster', no GPU."""

    def __init__(self, original, spec, shape, worker=None, **kw):
        self.log = []

    def __call__(self, cubin):
        return 0.03

    def close(self):
        pass


@pytest.mark.skipif(tools.find("nvdisasm") is None, reason="nvdisasm missing")
@pytest.mark.parametrize("bitwise_ok", [True, False])
def test_play_publishes_only_what_passed_the_bitwise_check(tmp_path, monkeypatch, cfg, bitwise_ok):
    from cudal2.result import EvalResult, Stage
    from cudal2.sass import run as sass_run
    parent = next(e for e in manifest.read(SHIPPED) if e.id == SM80)
    for f in (parent.source, parent.binary):
        shutil.copy(SHIPPED / f, tmp_path / f)
    manifest.write(tmp_path, [parent])

    def judged(path, e, source, cfg, worker, gpu):   # TEST DOUBLE of the GPU judge: made-up speedups
        new = path.parent != tmp_path
        return EvalResult(name=path.stem, source_hash="", M=e.M, N=e.N, K=e.K, stage=Stage.DONE, ok=True,
                          speedup={m: {"vendor_default": 1.5 if new else 1.4} for m in ("offline", "server")})

    monkeypatch.setattr(verify, "PairedMeasure", FakePairedMeasure)
    monkeypatch.setattr(verify, "bitwise", lambda *a, **k: verify.BitwiseReport(bitwise_ok, "" if bitwise_ok else
                                                                                "3 outputs differ (test)"))
    monkeypatch.setattr(sass_run, "_judge", judged)
    o = sass_run.play(parent, tmp_path, cfg, "test", "greedy", budget_s=60, max_latency=32)
    assert o.agent["reproduced"] and o.agent["stats"]["gpu_failed"] == 0
    (got,) = manifest.read(tmp_path)
    if bitwise_ok:
        assert o.status == "published" and got.id == o.new_id and got.provenance["kind"] == "sass"
    else:
        assert o.status == "bitwise mismatch" and "differ" in o.detail and got.id == parent.id


@pytest.mark.skipif(tools.find("nvdisasm") is None, reason="nvdisasm missing")
def test_play_runs_the_builds_rules_on_the_reordered_cubin_before_the_judge(tmp_path, monkeypatch, cfg):
    from cudal2.harness import build
    from cudal2.harness.evaluate import Evaluator
    from cudal2.sass import run as sass_run
    parent = next(e for e in manifest.read(SHIPPED) if e.id == SM80)
    for f in (parent.source, parent.binary):
        shutil.copy(SHIPPED / f, tmp_path / f)
    manifest.write(tmp_path, [parent])
    checked = []   # (the cubin the rules saw, the real rules' verdict on it)

    def never(*a, **k):
        raise AssertionError("a cubin the build's rules refused reached the judge")

    monkeypatch.setattr(build, "binary_violations", _recording(build.binary_violations, checked))
    monkeypatch.setattr(verify, "PairedMeasure", FakePairedMeasure)
    monkeypatch.setattr(verify, "bitwise", lambda *a, **k: verify.BitwiseReport(True, ""))
    monkeypatch.setattr(Evaluator, "judge_request", never)
    o = sass_run.play(parent, tmp_path, cfg, "test", "greedy", budget_s=60, max_latency=32)
    assert o.status == "refused by the build's rules" and "test" in o.detail
    (data, honest_verdict), = checked
    assert data != (tmp_path / parent.binary).read_bytes()   # the reordered cubin, not the shipped one
    assert honest_verdict == []   # a legal reorder of an honest kernel passes the real rules
    assert [e.id for e in manifest.read(tmp_path)] == [parent.id]


def _recording(real, checked):
    """TEST DOUBLE of build.binary_violations: runs the real rules and records them, then refuses."""
    def rules(path, spec):
        checked.append((path.read_bytes(), real(path, spec)))
        return ["sass: a rule the reorder broke (test)"]
    return rules


def test_a_reorder_is_compared_bitwise_across_the_range_the_library_serves_not_its_sources_claim():
    import dataclasses
    e = next(e for e in manifest.read(SHIPPED) if e.id == SM80)   # its source claims its one shape
    ranged = dataclasses.replace(e, M=None, m_range=[1, 256])
    Ms = {M for M, _, _ in verify.verify_shapes(ranged)}
    assert {1, 256} <= Ms and len(Ms) > 2
