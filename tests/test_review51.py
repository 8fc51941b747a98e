"""Review 51: the compiler's sandbox (harness/sandbox.py). What it showed beyond the toolchain (a
wrapper nvcc's prefix: the home folder), where it ran another compiler than the open build (a gcc
link on PATH), where it could not run at all for an ordinary user (chroot in /usr/sbin), a date one
source read two ways (__TIMESTAMP__ in the machine's time zone), mounts it left writable, and the
probe and keys that say whether it ran."""

import dataclasses
import os
import subprocess
import sys
import threading
import time

import pytest

from cudal2.harness import build, evaluate, sandbox

from .conftest import BAD, NAIVE, needs_nvcc

pytestmark = needs_nvcc

# the folder of the real nvcc (its profile's _HERE_), behind any wrapper on PATH
BIN = next((os.path.realpath(p) for p in sandbox.toolkit_dirs("nvcc") if os.path.isfile(os.path.join(p, "nvcc.profile"))),
           "")


def _wrapper(folder, name: str, target: str, extra: str = "") -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f'#!/bin/sh\nexec {target} {extra} "$@"\n')
    (folder / name).chmod(0o755)
    return str(folder / name)


@pytest.fixture
def home_with_wrapper_nvcc(tmp_path, monkeypatch):
    """A home folder whose ~/bin holds nvcc and ptxas as wrapper scripts first on PATH, and whose
    build cache (the default, ~/.cache/cudal2/build) holds another candidate's build."""
    home = tmp_path / "home"
    for tool in ("nvcc", "ptxas"):
        _wrapper(home / "bin", tool, os.path.join(BIN, tool))
    neighbour = home / ".cache" / "cudal2" / "build" / "zz51-neighbour"
    neighbour.mkdir(parents=True)
    (neighbour / "kernel.cu").write_text("#error zz-found-it\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{home / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return home


def test_a_wrapper_nvcc_in_home_shows_the_wrapper_not_the_home_folder(home_with_wrapper_nvcc):
    home = str(home_with_wrapper_nvcc)
    ops, copies = sandbox.layout("nvcc", [], [str(home_with_wrapper_nvcc / "bin" / "nvcc")], [home])
    shown = [op[1:] for op in ops] + copies
    assert f"f{home}/bin/nvcc" in ops
    assert not any(sandbox._inside(home, p) for p in shown)   # neither the home folder nor a parent of it


def test_a_build_through_a_wrapper_nvcc_in_home_cannot_read_the_build_cache(works, home_with_wrapper_nvcc, no_policy,
                                                                             cfg):
    src = (BAD / "zz51_home_wrapper_neighbour.cu").read_text().replace("/root", str(home_with_wrapper_nvcc))
    bcfg = dataclasses.replace(cfg.build, cache_dir="", sandbox="on")
    assert build.cache_root(bcfg) == home_with_wrapper_nvcc / ".cache" / "cudal2" / "build"
    r = build.build(src, bcfg)
    assert not r.ok and "zz-found-it" not in r.log + r.reason and "No such file" in r.reason, r.reason
    assert "sandbox" not in r.reason   # it ran in the sandbox: through the wrapper, shown as a file


def test_a_private_folder_inside_a_shown_one_is_hidden(works, tmp_path):
    shown = tmp_path / "inc"   # an include folder that holds the build cache
    (shown / "cache" / "other").mkdir(parents=True)
    (shown / "cache" / "other" / "kernel.cu").write_text("zz-neighbour\n")
    (shown / "header.h").write_text("zz-header\n")
    work = shown / "cache" / "mine"
    work.mkdir()
    cmd = sandbox.wrap(["sh", "-c", f"cat {shown}/header.h; ls {shown}/cache; cat {shown}/cache/other/kernel.cu"],
                       str(work), str(shown / "cache" / ".sandbox"), "nvcc", [str(shown)])
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["zz-header", "mine"] and "zz-neighbour" not in r.stdout


def test_a_toolkit_reached_through_a_linked_folder_runs_in_the_sandbox(works, tmp_path, monkeypatch):
    # /opt/cuda -> /opt/cuda-12.8: nvcc's path named a folder the sandbox did not have
    (tmp_path / "cuda").symlink_to(os.path.dirname(BIN))
    monkeypatch.setenv("PATH", f"{tmp_path / 'cuda' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert sandbox.probe.__wrapped__("nvcc", build._include_dirs(), str(tmp_path / "root")) == ""


@pytest.mark.timeout(300)
def test_the_sandbox_runs_the_gcc_the_open_build_runs(works, tmp_path, monkeypatch, cfg):
    # ~/bin/gcc -> a gcc elsewhere (CUDA's usual fix for a too new system gcc): the sandbox bound the
    # link's target prefix, not the link, and its PATH search found /usr/bin/gcc, another compiler
    alt = _wrapper(tmp_path / "opt" / "gcc-alt" / "bin", "gcc", sandbox.shutil.which("gcc"), "-DZZ51_ALT_GCC=1")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "gcc").symlink_to(alt)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    src = "#ifdef ZZ51_ALT_GCC\n#error zz-alt-gcc\n#endif\n" + NAIVE
    said = {mode: build.build(src, dataclasses.replace(cfg.build, sandbox=mode, cache_dir=str(tmp_path / mode))).reason
            for mode in ("on", "off")}
    assert "zz-alt-gcc" in said["off"] and "zz-alt-gcc" in said["on"], said


def test_the_setup_finds_chroot_without_sbin_on_path(works, tmp_path, monkeypatch):
    # a Debian user's PATH has no /usr/sbin, where chroot is: the probe failed and 'auto' built open
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if "sbin" not in p))
    assert sandbox.probe.__wrapped__("nvcc", build._include_dirs(), str(tmp_path / "root")) == ""


@pytest.mark.timeout(300)
def test_timestamp_reads_utc_in_any_time_zone(works, tmp_path, monkeypatch, cfg):
    src = (BAD / "zz51_timestamp_zone.cu").read_text()
    hashes = {}
    for zone, mode in (("", "on"), ("America/New_York", "off"), ("Asia/Tokyo", "on")):
        monkeypatch.setenv("TZ", zone)
        r = build.build(src, dataclasses.replace(cfg.build, sandbox=mode, cache_dir=str(tmp_path / f"{mode}{zone}")))
        assert r.ok, r.reason
        hashes[zone] = r.device_sha256
    assert len(set(hashes.values())) == 1, hashes


def test_mounts_under_a_shown_folder_are_read_only(works, tmp_path):
    # `mount --rbind -o ro` left a folder's submounts writable, on the machine itself
    inc = tmp_path / "inc"
    (inc / "sub").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    script = (f"import subprocess, sys; sys.path[:0] = {sys.path!r}\n"
              "from cudal2.harness import sandbox\n"
              f"subprocess.run(['mount', '-t', 'tmpfs', 'zz', '{inc}/sub'], check=True)\n"
              f"cmd = sandbox.wrap(['sh', '-c', 'touch {inc}/sub/zz-written'], '{tmp_path}/work', '{tmp_path}/root', "
              f"'nvcc', ['{inc}'])\n"
              f"print(subprocess.run(cmd, capture_output=True, text=True).returncode)\n"
              f"import os; print(os.listdir('{inc}/sub'))\n")
    r = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", sys.executable, "-c", script],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        pytest.skip(f"no nested namespace here: {r.stderr.strip()[-200:]}")
    assert r.stdout.strip().endswith("[]"), r.stdout   # the submount, listed after the build: empty


def test_the_new_roots_own_folders_are_read_only(works, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    cmd = sandbox.wrap(["sh", "-c", "touch /zz 2>/dev/null || echo refused; echo made > here"], str(work),
                       str(tmp_path / "root"), "nvcc", [])
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["refused"] and (work / "here").read_text() == "made\n"


def test_the_compiler_holds_no_capability(works, tmp_path):
    # the mount namespace still holds the machine's root below the chroot
    work = tmp_path / "work"
    work.mkdir()
    cmd = sandbox.wrap(["sh", "-c", "mkdir x; /usr/sbin/chroot x /bin/true || echo no-chroot; "
                                    "mount -t proc zz x || echo no-mount"], str(work), str(tmp_path / "root"), "nvcc", [])
    if not os.path.exists("/usr/bin/setpriv"):
        pytest.skip("util-linux setpriv is not installed")
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["no-chroot", "no-mount"], r.stdout + r.stderr


def test_the_probe_runs_the_builds_own_commands(works, tmp_path, monkeypatch, cfg):
    # a flag naming a host compiler outside what the sandbox shows: the probe of nvcc alone passed,
    # then every build failed in the sandbox and was cached as the candidate's failure
    (tmp_path / "ccbin").mkdir()
    (tmp_path / "ccbin" / "gcc").symlink_to(sandbox.shutil.which("gcc"))
    (tmp_path / "ccbin" / "g++").symlink_to(sandbox.shutil.which("g++"))
    bcfg = dataclasses.replace(cfg.build, sandbox="auto", flags=[*cfg.build.flags, "-ccbin", str(tmp_path / "ccbin")])
    with pytest.warns(UserWarning, match="probe build failed"):
        assert build.sandbox_state(bcfg)[0] == "open"
    assert build.build(NAIVE, bcfg).ok


def test_threads_asking_at_once_probe_once(monkeypatch, cfg):
    calls = []

    def slow(*a):
        calls.append(a)
        time.sleep(0.3)
        return ""
    monkeypatch.setattr(sandbox, "probe", sandbox.functools.cache(slow))
    states = []
    threads = [threading.Thread(target=lambda: states.append(build.sandbox_state(cfg.build))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and states == [("sandboxed", "")] * 4


def test_a_stored_verdict_names_the_sandbox_state(monkeypatch, cfg):
    from cudal2.problem import Problem
    bcfg = dataclasses.replace(cfg, build=dataclasses.replace(cfg.build, sandbox="auto"))
    monkeypatch.setattr(sandbox, "probe", lambda *a: "")
    sandboxed = evaluate.result_key(NAIVE, Problem(64, 64, 64), bcfg, "H100")
    monkeypatch.setattr(sandbox, "probe", lambda *a: "zz51 no namespaces")
    with pytest.warns(UserWarning, match="zz51 no namespaces"):
        opened = evaluate.result_key(NAIVE, Problem(64, 64, 64), bcfg, "H100")
    assert sandboxed != opened


def test_an_include_folder_named_through_a_link_is_there(works, tmp_path, monkeypatch, cfg):
    # a venv's lib64 -> lib: the sandbox bound the resolved folder only, and -I named the link
    inc = build.cutlass_include()
    if inc is None:
        pytest.skip("no CUTLASS headers")
    (tmp_path / "lib64").symlink_to(os.path.dirname(inc))
    monkeypatch.setattr(build, "cutlass_include", lambda: str(tmp_path / "lib64" / os.path.basename(inc)))
    r = build.build("#include <cutlass/version.h>\n" + NAIVE, dataclasses.replace(cfg.build, sandbox="on"))
    assert r.ok, r.reason



def test_the_toolkits_prefix_is_not_shown():
    # nvcc in $PREFIX/bin (conda): TOP, the profile's prefix, was the environment, conda-meta and all
    dirs = [os.path.realpath(p) for p in sandbox.toolkit_dirs("nvcc")]
    top = os.path.dirname(BIN)
    assert BIN in dirs and top not in dirs


@pytest.mark.parametrize("broken", ["unshare", "setup"])
def test_a_sandbox_that_does_not_start_is_not_the_sources_cached_verdict(works, monkeypatch, tmp_path, cfg, broken):
    # unshare refused (the machine's namespace limit) or a mount failed after the probe passed: the
    # build failed as the compiler's failure and was cached as the source's verdict
    if broken == "unshare":
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / "unshare").write_text("#!/bin/sh\necho 'unshare: unshare failed: No space left on device' >&2\n"
                                                  "exit 1\n")
        (tmp_path / "bin" / "unshare").chmod(0o755)
        monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    else:
        monkeypatch.setattr(sandbox, "_SETUP", sandbox._SETUP.replace("mount -t tmpfs -o size=4m", "mount -t zz51fs -o size=4m"))
    monkeypatch.setattr(sandbox, "probe", lambda *a: "")
    bcfg = dataclasses.replace(cfg.build, sandbox="on")
    r = build.build(NAIVE, bcfg)
    assert not r.ok and r.reason.startswith("sandbox: "), r.reason
    assert not (build.cache_root(bcfg) / r.key).exists()
