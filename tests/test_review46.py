"""Review 46: what a candidate, or a library folder, reached past the rules (see each section).
Each test is one adversarial property; each failed on the code before the review."""

import dataclasses
import shutil
import time

import pytest

from cudal2.harness import build

from .conftest import BAD, KERNELS, NAIVE, needs_nvcc



# --- PTX the build reads into its caller's process --------------------------------------------
# An inline asm statement of PTX comment lines, unrolled under a branch never taken: nvcc writes
# tens or hundreds of MB of PTX in seconds with little memory; the build read it whole into the
# caller's process (the trainer's, in the reward service) and scanned it in Python, outside every
# timeout, and the kernel then built and passed (comments assemble to nothing).

@needs_nvcc
@pytest.mark.timeout(300)
def test_the_ptx_comment_bomb_fails_the_build_before_its_ptx_is_read(cfg, monkeypatch):
    from cudal2.harness import cubin
    read = []
    monkeypatch.setattr(cubin, "canonical_ptx", lambda text: read.append(len(text)) or text)
    t0 = time.monotonic()
    res = build.build((BAD / "zz46_ptx_comment_bomb.cu").read_text(), cfg.build)
    assert not res.ok and res.stage == "build" and "MiB of PTX" in res.reason
    assert read == []                       # never read into this process
    assert time.monotonic() - t0 < 60


@needs_nvcc
@pytest.mark.timeout(300)
def test_a_failed_ptx_bomb_leaves_no_ptx_in_the_cache(cfg):
    res = build.build((BAD / "zz46_ptx_comment_bomb.cu").read_text(), cfg.build)
    folder = build.cache_root(cfg.build) / res.key
    assert sorted(p.name for p in folder.iterdir()) == ["build.json", "build.log", "kernel.cu"]


@needs_nvcc
@pytest.mark.timeout(300)
def test_an_honest_kernels_ptx_is_far_under_the_limit(cfg):
    for name in ("naive_v2.cu", "tma_v2.cu"):
        res = build.build((KERNELS / "good" / name).read_text(), cfg.build)
        assert res.ok, res.reason


# --- a library folder's manifest: the flags a rebuild passes to nvcc ------------------------------
# nvcc runs its stages through a shell: a flag `-DZ=$(cmd)` runs cmd. `cudal2 library build` passed
# every entry's recorded `build.flags` to nvcc, so a library folder from elsewhere (its manifest
# is data) ran any command on the machine that rebuilt it.

@pytest.fixture
def lib_with_flags(tmp_path):
    """A one-entry library (good/naive_v2.cu, no binary yet) whose entry records `flags`."""
    from cudal2.library import manifest

    def make(flags, archs=("sm_90a",)):
        folder = tmp_path / "lib"
        folder.mkdir(exist_ok=True)
        (folder / "e.cu").write_text(NAIVE)
        e = manifest.Entry(id="e", M=128, N=128, K=128, family="custom", params={}, provenance={"kind": "llm"},
                           source="e.cu", source_sha256=manifest.sha256_text(NAIVE), device_sha256="0" * 64,
                           build={"flags": list(flags), "archs": list(archs)}, measured={}, gpu={}, date="",
                           binary="e.cubin", spec={"kernels": []})
        manifest.write(folder, [e])
        return folder
    return make


@needs_nvcc
@pytest.mark.timeout(300)
def test_a_manifest_flag_does_not_run_a_command_at_rebuild(lib_with_flags, tmp_path):
    from cudal2.config import BuildConfig
    from cudal2.library.rebuild import rebuild
    pwned = tmp_path / "pwned"
    folder = lib_with_flags(["-O3", f"-DZ=$(touch {pwned})"])
    report = rebuild(folder, BuildConfig(cache_dir=str(tmp_path / "cache")), None)
    assert not pwned.exists()
    assert report["failed"] and "recorded flag" in report["failed"][0] and report["shipped"] == []


@pytest.mark.parametrize("flags", [["-Xcompiler=-DY=1 `id`"], ["-ccbin=/tmp/x"], ["--compiler-bindir", "/tmp"],
                                   ["-Xcompiler", "-wrapper,sh"], ["--pre-include", "/etc/passwd"], ["-I/"],
                                   ["--options-file", "/tmp/o"], "-O3", [3]])
def test_recorded_flags_outside_the_safe_forms_are_refused(lib_with_flags, flags):
    from cudal2.config import BuildConfig
    from cudal2.library import manifest
    from cudal2.library.rebuild import recorded_build
    (e,) = manifest.read(lib_with_flags(["-O3"]), check_binaries=False)
    e.build["flags"] = flags
    with pytest.raises(ValueError):
        recorded_build(e, BuildConfig())


@pytest.mark.parametrize("archs", [["sm_90a$(id)"], ["compute_90"], [], "sm_90a"])
def test_recorded_archs_other_than_sm_are_refused(lib_with_flags, archs):
    from cudal2.config import BuildConfig
    from cudal2.library import manifest
    from cudal2.library.rebuild import recorded_build
    (e,) = manifest.read(lib_with_flags(["-O3"]), check_binaries=False)
    e.build["archs"] = archs
    with pytest.raises(ValueError):
        recorded_build(e, BuildConfig())


def test_the_flags_the_search_records_and_the_users_own_pass():
    from cudal2.config import BuildConfig
    from cudal2.library import manifest
    from cudal2.library.rebuild import recorded_build
    for e in manifest.read(KERNELS.parent.parent / "kernels_out" / "sm90", check_binaries=False):
        assert recorded_build(e, BuildConfig()).flags == e.build["flags"]
    (e,) = [next(iter(manifest.read(KERNELS.parent.parent / "kernels_out" / "sm90", check_binaries=False)))]
    e.build["flags"] = ["-Xptxas=-O3", "-DTILE=128", "--use_fast_math"]
    assert recorded_build(e, BuildConfig(flags=["-Xptxas=-O3"])).flags == e.build["flags"]   # the user's own


# --- the build's own limits are rules: a verdict cached before one was added is not reused ------

def test_the_build_modules_own_limits_are_in_the_cache_key():
    from pathlib import Path
    assert Path(build.__file__) in build.rule_files()


def test_a_cached_verdict_is_not_reused_after_the_build_module_changes(cfg, monkeypatch, tmp_path):
    from pathlib import Path
    before = build.build_key(NAIVE, cfg.build)
    edited = tmp_path / "build.py"
    edited.write_text(Path(build.__file__).read_text() + "\nMAX_PTX_MB = 1\n")
    real = build.rule_files
    monkeypatch.setattr(build, "rule_files", lambda: [edited if f == Path(build.__file__) else f for f in real()])
    build.rules_version.cache_clear()
    try:
        assert build.build_key(NAIVE, cfg.build) != before
    finally:
        monkeypatch.undo()
        build.rules_version.cache_clear()


# --- an M-range's interior: the light check runs the Gaussian trial too ------------------------
# The light check (exact stage, cancelling trial) was all an M-range's interior M values got, and
# the cancelling trial can be told by looking (A positive): bad/zz46_mrange_interior_fp16_partials
# was honest at the range's ends and the judged M and there, and used fp16 partial sums elsewhere.

def test_a_light_shape_gets_the_gaussian_and_the_cancelling_trial():
    from cudal2.harness.judge import TIMED_DIST, trial_dists
    assert trial_dists(True, 3)[:2] == ["normal", "cancel"] and TIMED_DIST in trial_dists(True, 3)


def test_a_full_shape_still_gets_every_trial():
    from cudal2.harness.judge import trial_dists
    every = ["normal", "uniform", "cancel", "outlier", "outlier_w", "outlier_split"]
    assert trial_dists(False, 3) == every
    assert trial_dists(False, 8) == every + ["normal", "normal"]


def test_the_interior_kernel_claims_a_range_around_the_gpu_suites_shape():
    from cudal2.harness.launch import parse
    from cudal2.problem import Problem, parse_claim
    src = (BAD / "zz46_mrange_interior_fp16_partials.cu").read_text()
    full, light = parse_claim(src).verification_shapes(Problem(257, 136, 1032), parse(src).m_tiles)
    assert sorted(s.M for s in full) == [1, 257, 512] and len(light) >= 100   # its honest M are the full ones


@pytest.mark.gpu
@pytest.mark.timeout(900)
def test_the_interior_kernel_fails_the_gaussian_trial_at_a_light_shape(fast_cfg):
    from cudal2.harness.evaluate import Candidate, Evaluator
    from cudal2.problem import Problem
    src = (BAD / "zz46_mrange_interior_fp16_partials.cu").read_text()
    ev = Evaluator(fast_cfg)
    try:
        (r,) = ev.evaluate([Candidate("zz46", src)], Problem(257, 136, 1032), reuse=False)
    finally:
        ev.close()
    assert not r.ok and r.stage.value == "gaussian", (r.stage, r.reason)
    assert "dist=normal" in r.reason


def test_a_light_shape_gets_the_outlier_trials_too():
    # (review 71: an interior M gated on inputs past 3.5 met no other trial)
    from cudal2.harness.judge import GAUSSIAN_DISTS, trial_dists
    outliers = {"outlier", "outlier_w", "outlier_split"}
    assert outliers <= set(trial_dists(True, 3)) and outliers <= set(GAUSSIAN_DISTS)


def test_every_bad_kernel_judged_past_load_declares_the_gpu_suites_shape():
    # (bad/zz74 first declared 256x384x1024 and failed at load on the H100, never reaching the trial
    # it was written for: a shape line must cover the suite's shape, test_gpu_judge.SHAPE)
    import json

    from cudal2.problem import Problem, ProblemError, parse_claim
    wrong = []
    for name, want in json.loads((BAD / "EXPECTED.json").read_text()).items():
        stages = want["stage"] if isinstance(want["stage"], list) else [want["stage"]]
        if {"policy", "build", "load"} & set(stages) or not (BAD / name).exists():   # (shape read after build)
            continue
        try:
            if not parse_claim((BAD / name).read_text()).covers(Problem(257, 136, 1032)):
                wrong.append(name)
        except ProblemError:
            wrong.append(name)
    assert not wrong
