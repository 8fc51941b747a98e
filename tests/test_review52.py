"""Review 52: the compiler's sandbox again (harness/sandbox.py) and where a build's words and verdicts
go next. A private folder shown again from inside a hidden one, a loop of links that showed its
folder, an include folder of the build's flags the sandbox did not show, a sandbox failure stored
and rewarded as the source's verdict, a reason's markup and escapes printed to the terminal, a
library manifest whose rebuild wrote outside its folder or compiled host code, and a relative
build.nvcc that only the sandboxed build found."""

import dataclasses
import hashlib
import io
import json
import os

import pytest

from cudal2.harness import build, sandbox

from .conftest import BAD, KERNELS, NAIVE, needs_nvcc

pytestmark = needs_nvcc


@pytest.fixture
def failing_setup(monkeypatch):
    """A sandbox that fails to start after the probe passed (a mount refused)."""
    monkeypatch.setattr(sandbox, "_SETUP", sandbox._SETUP.replace("mount -t tmpfs -o size=4m", "mount -t zz52fs -o size=4m"))
    monkeypatch.setattr(sandbox, "probe", lambda *a: "")


def test_a_cache_in_a_folder_shown_from_inside_the_hidden_home_is_hidden(works, no_policy, tmp_path, monkeypatch, cfg):
    # /usr/local holds the home folder, an include folder of its venv is shown from inside it, and
    # the build cache is inside that: only the home folder was hidden, the cache shown with the venv
    usr = tmp_path / "usr" / "local"
    home, venv_inc = usr / "zz52-home", usr / "zz52-home" / "venv" / "include"
    neighbour = venv_inc / "cache" / "zz52-neighbour"
    neighbour.mkdir(parents=True)
    (neighbour / "kernel.cu").write_text("#error zz-found-it\n")
    monkeypatch.setenv("HOME", str(home))
    shown = build._include_dirs
    monkeypatch.setattr(build, "_include_dirs", lambda c=None: (*shown(c), str(usr), str(venv_inc)))
    src = (BAD / "zz52_nested_cache_neighbour.cu").read_text().replace("/usr/local", str(usr))
    r = build.build(src, dataclasses.replace(cfg.build, sandbox="on", cache_dir=str(venv_inc / "cache")))
    assert not r.ok and "zz-found-it" not in r.log + r.reason and "No such file" in r.reason, r.reason


def test_a_folder_named_through_a_loop_of_links_shows_nothing(tmp_path):
    # _links gave up after 1000 steps and returned the folder it had reached: the loop's own folder
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    ops, copies = sandbox.layout("nvcc", [str(tmp_path / "a" / "include")], [], [])
    assert not any(sandbox._inside(op[1:], str(tmp_path)) or sandbox._inside(str(tmp_path), op[1:])
                   for op in ops if op[1:] not in sandbox.SYSTEM)


def test_an_include_folder_the_build_flags_name_builds_as_it_does_open(works, tmp_path, cfg):
    # -I in build.flags with its headers in build.extra_headers: the sandbox did not show the folder,
    # the probe passed, and every build that included one failed there, cached as the source's verdict
    (tmp_path / "inc" / "zz52").mkdir(parents=True)
    (tmp_path / "inc" / "zz52" / "tile.h").write_text("#define ZZ52_TILE 32\n")
    bcfg = dataclasses.replace(cfg.build, flags=[*cfg.build.flags, "-I", str(tmp_path / "inc")], extra_headers=["zz52/*"])
    src = "#include <zz52/tile.h>\n" + NAIVE
    on, off = (build.build(src, dataclasses.replace(bcfg, sandbox=m, cache_dir=str(tmp_path / m))) for m in ("on", "off"))
    assert on.ok and off.ok and on.device_sha256 == off.device_sha256, on.reason


def test_a_sandbox_that_does_not_start_is_not_the_sources_stored_verdict(works, failing_setup, tmp_path, cfg):
    # review 51 kept it out of the build cache; the results db stored it, reused on every resume
    from cudal2.harness.evaluate import Candidate, Evaluator, result_key
    from cudal2.harness.store import Store
    from cudal2.problem import Problem
    bcfg = dataclasses.replace(cfg, build=dataclasses.replace(cfg.build, sandbox="on"))
    store, p = Store(str(tmp_path / "r.sqlite")), Problem(64, 64, 64)
    ev = Evaluator(bcfg, store)
    try:
        (r,) = ev.evaluate([Candidate("zz52", NAIVE)], p)
    finally:
        ev.close()
    assert not r.ok and r.reason.startswith("sandbox: ")
    assert store.get(result_key(NAIVE, p, bcfg, "")) is None


def test_a_sandbox_that_does_not_start_earns_no_reward(works, failing_setup, tmp_path):
    # the reward service gave it the floor, kept for the run
    from cudal2.config import Config
    from cudal2.problem import Problem
    from cudal2.rl.service import RewardService
    svc = RewardService(Config.load(build={"cache_dir": str(tmp_path / "cache"), "sandbox": "on"}), gpu=False)
    (parts,) = svc.score(["```cuda\n" + NAIVE + "\n```"], [Problem(64, 64, 64)])
    assert parts.reward is None and parts.reason.startswith("sandbox: ") and not svc.cache


def test_a_reasons_markup_and_escapes_print_as_written(cfg):
    # an `#error` line is the reason: `[/zz52]` raised MarkupError, its ESC sequences reached the terminal
    from rich.console import Console

    from cudal2.report import result_table
    from cudal2.result import EvalResult, Stage
    b = build.build((BAD / "zz52_reason_escapes.cu").read_text(), cfg.build)
    assert not b.ok and "\x1b]0;zz52-title" in b.reason
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=400).print(
        result_table(EvalResult(name="zz52", source_hash="", M=64, N=64, K=64).fail(Stage.BUILD, b.reason)))
    assert "[/zz52]" in out.getvalue() and "\x1b]" not in out.getvalue() and "\x1b[2J" not in out.getvalue()


def _library(folder, source: str, eid: str = "zz52") -> None:
    folder.mkdir(parents=True)
    (folder / "k.cu").write_text(source)
    entry = {"id": eid, "M": 64, "N": 64, "K": 64, "family": "naive", "params": {}, "provenance": {"kind": "llm"},
             "source": "k.cu", "source_sha256": hashlib.sha256(source.encode()).hexdigest(), "device_sha256": "0" * 64,
             "build": {}, "measured": {}, "gpu": {}, "date": "", "binary": "k.cubin", "spec": {}}
    (folder / "manifest.json").write_text(json.dumps({"version": 1, "entries": [entry]}))


def test_a_manifest_id_with_a_folder_part_is_refused(tmp_path):
    # the rebuild wrote `<id>.cubin` beside the manifest: '../x' wrote x.cubin outside the library
    from cudal2.library.manifest import LibraryError, read
    _library(tmp_path / "lib" / "sm90", NAIVE, eid="../zz52-outside")
    with pytest.raises(LibraryError, match="plain name"):
        read(tmp_path / "lib" / "sm90", check_binaries=False)


def test_a_rebuild_compiles_no_host_code(tmp_path, cfg):
    # a manifest's source without a launch spec was built as v1 host code: outside the sandbox,
    # without the memory limit
    from rich.console import Console

    from cudal2.library.rebuild import rebuild
    _library(tmp_path / "lib", (KERNELS / "good" / "naive.cu").read_text())
    report = rebuild(tmp_path / "lib", cfg.build, Console(file=io.StringIO()))
    assert report["failed"] and "host code" in report["failed"][0]
    assert not os.path.exists(build.cache_root(cfg.build)), os.listdir(build.cache_root(cfg.build))


def test_a_relative_nvcc_builds_open_as_it_does_sandboxed(works, tmp_path, monkeypatch, cfg):
    # build.nvcc = bin/nvcc: the open build's shell ran it from the build folder, 'not found', cached
    real = next(p for p in sandbox.toolkit_dirs("nvcc") if os.path.isfile(os.path.join(p, "nvcc.profile")))
    (tmp_path / "bin").symlink_to(os.path.realpath(real))
    monkeypatch.chdir(tmp_path)
    bcfg = dataclasses.replace(cfg.build, nvcc="bin/nvcc")
    on, off = (build.build(NAIVE, dataclasses.replace(bcfg, sandbox=m, cache_dir=str(tmp_path / m))) for m in ("on", "off"))
    assert on.ok and off.ok and on.device_sha256 == off.device_sha256, off.reason
