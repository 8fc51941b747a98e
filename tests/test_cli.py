"""CLI: error paths (one line on stderr, exit code 2, no traceback, nothing written), and `generate --build-only`."""

import shutil

import pytest
from typer.testing import CliRunner

from cudal2 import cli
from cudal2.problem import Problem
from cudal2.search.population import Population

from .conftest import KERNELS

runner = CliRunner()
NAIVE = str(KERNELS / "good" / "naive.cu")


def run(*args):
    return runner.invoke(cli.app, list(args))


def assert_clean_error(res, needle):
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize("mnk,needle", [("4096,4096", "three positive integers"), ("a,b,c", "three positive"),
                                        ("64,64,60", "multiple of 8"), ("0,64,64", "positive")])
def test_bad_mnk(mnk, needle):
    assert_clean_error(run("eval", NAIVE, "--mnk", mnk), needle)


def test_missing_kernel_file():
    assert_clean_error(run("eval", "nope.cu", "--mnk", "64,64,64"), "cannot read kernel file")


def test_kernel_without_entry_point():
    assert_clean_error(run("eval", str(KERNELS / "bad" / "no_entry.cu"), "--mnk", "64,64,64"), "nor a cudal2_gemm entry point")


def test_bad_mode():
    assert_clean_error(run("eval", NAIVE, "--mnk", "64,64,64", "--mode", "fast"), "--mode")


def test_bad_config(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("[timing]\nrepeats = 0\n")
    assert_clean_error(run("eval", NAIVE, "--mnk", "64,64,64", "-c", str(f)), "timing.repeats")


def test_no_gpu(monkeypatch):
    monkeypatch.setattr("cudal2.harness.device.gpu_present", lambda: "no NVIDIA GPU found (test)")
    assert_clean_error(run("eval", NAIVE, "--mnk", "64,64,64"), "no NVIDIA GPU found")


def test_baselines_missing_shapes_file():
    assert_clean_error(run("baselines", "--shapes", "missing.json"), "shapes file not found")


def test_baselines_bad_shapes_file(tmp_path):
    f = tmp_path / "s.json"
    f.write_text("[[64, 64]]")
    assert_clean_error(run("baselines", "--shapes", str(f)), "entry 0")


def test_doctor_lists_components():
    res = run("doctor")
    assert res.exit_code == 0 and "nvcc" in res.output and "CUTLASS" in res.output and "compiler sandbox" in res.output


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_build_only_admits_a_pending_round_and_warms_the_cache_without_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr("cudal2.harness.device.gpu_present", lambda: "no NVIDIA GPU found (test)")
    f = tmp_path / "c.toml"
    f.write_text(f'[build]\ncache_dir = "{tmp_path / "cache"}"\n[run]\ndb = "{tmp_path / "run.sqlite"}"\n'
                 '[search]\nfamilies = ["sm80"]\nbatch = 2\n')
    res = run("generate", "--mnk", "64,64,64", "--build-only", "-c", str(f))
    assert res.exit_code == 0, res.output
    assert "2 built (0 already cached), 0 failed" in res.output
    assert len(list((tmp_path / "cache").glob("*/kernel.cubin"))) == 2  # sm80 renders are contract v2 cubins
    pending = Population(str(tmp_path / "run.sqlite")).members(Problem(64, 64, 64), "pending")
    assert len(pending) == 2  # what the GPU run will judge first
    # Run again before any GPU run: the same pending round, found in the cache, no new round.
    again = run("generate", "--mnk", "64,64,64", "--build-only", "-c", str(f))
    assert "2 built (2 already cached), 0 failed" in again.output


def test_generate_model_needs_its_m_list(tmp_path):
    assert_clean_error(run("generate", "--model", str(tmp_path / "config.json")), "--model and --m go together")


def test_generate_model_missing_config(tmp_path):
    assert_clean_error(run("generate", "--model", str(tmp_path / "nope.json"), "--m", "16"), "model config not found")


def test_generate_model_builds_its_layer_shapes_without_a_gpu(tmp_path, monkeypatch):
    import json
    monkeypatch.setattr("cudal2.harness.device.gpu_present", lambda: "no NVIDIA GPU found (test)")
    cfgf = tmp_path / "config.json"
    cfgf.write_text(json.dumps({"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
                                "vocab_size": 256}))
    c = tmp_path / "c.toml"
    c.write_text(f'[build]\ncache_dir = "{tmp_path / "cache"}"\n[run]\ndb = "{tmp_path / "run.sqlite"}"\n'
                 '[search]\nfamilies = ["sm80"]\nbatch = 1\n')
    res = run("generate", "--model", str(cfgf), "--m", "16", "--build-only", "-c", str(c))
    assert res.exit_code == 0, res.output
    pop = Population(str(tmp_path / "run.sqlite"))
    assert {p for p in [Problem(16, 64, 64), Problem(16, 128, 64), Problem(16, 64, 128), Problem(16, 256, 64)]
            if pop.members(p, "pending")} == {Problem(16, 64, 64), Problem(16, 128, 64), Problem(16, 64, 128),
                                              Problem(16, 256, 64)}


def test_library_bench_names_a_bad_shapes_file_in_one_line(tmp_path):
    bad = tmp_path / "shapes.json"
    bad.write_text('{"shapes": [[64, 64]]}')
    assert_clean_error(run("library", "bench", "--arch", "sm90", "--shapes", str(bad)), "entry 0 is not [M, N, K]")


def test_library_bench_resume_needs_the_json_file_it_continues():
    assert_clean_error(run("library", "bench", "--arch", "sm90", "--resume"), "--resume continues")
