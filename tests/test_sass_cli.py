"""`cudal2 sass` and its CPU-side pieces: one-line errors (unknown entry, no shipped cubin, no GPU,
bad options), the GPU entry points of `sass.verify` failing in one line without a GPU, the shapes
an entry is verified at, and a `sass` library entry that the manifest reader accepts and whose
recorded schedule replays to its binary.

`judged` below is a TEST DOUBLE of a judge result (made-up speedups): it stands in for the GPU
judge run that `cudal2 sass` does before publishing, and exists only in these tests."""

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
SM90 = "4096x4096x4096-sm90-164e8da2c3"      # CUTLASS host code: no cubin
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


def test_entry_without_a_shipped_cubin_is_one_line():
    assert_clean_error(run("--entry", SM90), "ships no cubin")


def test_no_gpu_is_one_line(no_gpu):
    assert_clean_error(run("--entry", SM80), NO_GPU)


@pytest.mark.parametrize("args,needle", [((), "exactly one of --entry ID or --all"),
                                         (("--all", "--entry", SM80), "exactly one of"),
                                         (("--all", "--agent", "ppo"), "--agent 'ppo'"),
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
    assert verify.verify_shapes(e, (SHIPPED / e.source).read_text()) == [(128, 64, 12288)]


@pytest.mark.skipif(tools.find("nvdisasm") is None, reason="nvdisasm missing")
def test_a_sass_entry_is_a_valid_library_entry_that_replays(tmp_path):
    from cudal2.result import EvalResult, Stage
    from cudal2.sass import agents
    from cudal2.sass.game import Game, replay
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
    (got,) = manifest.read(tmp_path)                           # validates hashes of source and binary
    assert got.id == ne.id and "-sass-" in got.id and got.provenance["kind"] == "sass"
    assert got.provenance["parent"] == parent.id and got.spec == parent.spec
    assert not (tmp_path / parent.binary).exists()             # the parent's cubin went with the parent
    p = got.provenance
    assert replay(data, p["kernel"], p["orders"], p["max_latency"]) == (tmp_path / got.binary).read_bytes()
