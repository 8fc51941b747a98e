"""The compiler's sandbox: a v2 build's compiler reaches no file outside the toolchain, the allowed
headers and its build folder, even where the source policy lets a file read through (here it is
switched off to show that), and builds the same binary as an open build."""

import dataclasses
import os
import re
import subprocess
import time
import uuid

import pytest

from cudal2 import bounded_run
from cudal2.harness import build, sandbox

from .conftest import NAIVE, needs_nvcc

pytestmark = needs_nvcc


def _inside(cmd: list[str], tmp_path, **env) -> subprocess.CompletedProcess:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    wrapped = sandbox.wrap(cmd, str(work), str(tmp_path / "root"), "nvcc", list(build._include_dirs()))
    return subprocess.run(wrapped, cwd=work, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SOURCE_DATE_EPOCH": "0", **env})


def test_a_file_beside_the_build_folder_is_not_there(works, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("zz-secret")
    r = _inside(["sh", "-c", f"cat {secret} /etc/hostname {os.path.abspath(__file__)}; ls ~root /proc; ls {tmp_path}"],
                tmp_path)
    assert "zz-secret" not in r.stdout and "No such file" in r.stderr
    assert r.stdout.split() == ["work"]   # of the test's folder, only the build folder is there


def test_the_build_folder_is_writable_at_its_own_path(works, tmp_path):
    r = _inside(["sh", "-c", "pwd; echo made > out.txt"], tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == str(tmp_path / "work")
    assert (tmp_path / "work" / "out.txt").read_text() == "made\n"


def test_system_folders_are_read_only(works, tmp_path):
    r = _inside(["sh", "-c", "touch /usr/zz-sandbox-write"], tmp_path)
    assert r.returncode != 0 and not os.path.exists("/usr/zz-sandbox-write")


def test_the_environment_is_the_builds_own(works, tmp_path):
    r = _inside(["env"], tmp_path, ZZ_SECRET="zz-token")
    names = {line.split("=", 1)[0] for line in r.stdout.splitlines()}
    assert "zz-token" not in r.stdout
    assert names <= {"PATH", "HOME", "TMPDIR", "SOURCE_DATE_EPOCH", "TZ", "LC_ALL", "PWD", "OLDPWD", "SHLVL", "_"}


def test_a_build_killed_at_its_timeout_leaves_no_process(works, tmp_path):
    marker = str(3000 + uuid.uuid4().int % 1000)   # sleep's argument names this test's processes
    (tmp_path / "work").mkdir()
    cmd = sandbox.wrap(["sh", "-c", f"sleep {marker} & sleep {marker}"], str(tmp_path / "work"),
                       str(tmp_path / "root"), "nvcc", [])
    r = bounded_run.run(cmd, timeout=2, max_bytes=1 << 20, cwd=str(tmp_path / "work"))
    assert r.rc is None
    time.sleep(0.5)
    left = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) == f"sleep {marker}"]
    assert left == []


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


# --- with the source policy switched off, the compiler cannot tell a host file is there ---------
# Each spelling reached a host file once, before the policy learnt it (reviews 44, 47, 48). Built
# naming a file that exists and one that does not (names of one length), the two builds must come
# out the same, log and all, in the sandbox; the open builds differ (the control: each spelling is
# a working oracle there, so the test can fail).

SPELLINGS = {
    "include": '#include "{}"\n',
    "has_include": '#if __has_include("{}")\n#error zz-found-it\n#endif\n',
    "pragma_dependency": '#pragma GCC dependency "{}"\n',
    "pasted_has_include": '#define CAT(a, b) a##b\n#if CAT(__has_, include)("{}")\n#error zz-found-it\n#endif\n',
}


def _present_and_absent(name: str, tmp_path, cfg, mode: str) -> tuple:
    secret, absent = tmp_path / "secret.h", tmp_path / "absent.h"
    secret.write_text("#error zz-found-it\n")
    bcfg = dataclasses.replace(cfg.build, sandbox=mode)
    seen = build.build(SPELLINGS[name].format(secret) + NAIVE, bcfg)
    unseen = build.build(SPELLINGS[name].format(absent) + NAIVE, bcfg)
    return ((seen.ok, seen.device_sha256, _said(seen).replace("secret.h", "absent.h")),
            (unseen.ok, unseen.device_sha256, _said(unseen)))


def _said(r) -> str:   # the build's words, less ptxas's timing
    return re.sub(r"Compile time = [\d.]+ ms", "", r.log + r.reason)


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_a_host_file_named_past_the_policy_is_not_there_for_the_compiler(works, no_policy, tmp_path, cfg, name):
    seen, unseen = _present_and_absent(name, tmp_path, cfg, "on")
    assert seen == unseen
    assert "zz-found-it" not in seen[2]


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_open_compiler_tells_them_apart(no_policy, tmp_path, cfg, name):
    seen, unseen = _present_and_absent(name, tmp_path, cfg, "off")
    assert seen != unseen


# --- the build's modes -------------------------------------------------------------------------

def test_a_sandboxed_build_makes_the_open_builds_binary(works, cfg, tmp_path):
    on = build.build(NAIVE, dataclasses.replace(cfg.build, sandbox="on", cache_dir=str(tmp_path / "a")))
    off = build.build(NAIVE, dataclasses.replace(cfg.build, sandbox="off", cache_dir=str(tmp_path / "b")))
    assert on.ok and off.ok and on.device_sha256 == off.device_sha256
    assert on.key != off.key   # a verdict of an open build is not reused by a sandboxed one


def test_on_refuses_where_the_sandbox_cannot_run_and_caches_nothing(monkeypatch, cfg):
    monkeypatch.setattr(sandbox, "probe", lambda *a: "user namespaces are not allowed")
    bcfg = dataclasses.replace(cfg.build, sandbox="on")
    r = build.build(NAIVE, bcfg)
    assert not r.ok and r.stage == "build" and r.reason.startswith("sandbox: user namespaces are not allowed")
    assert not (build.cache_root(bcfg) / r.key).exists()


def test_auto_builds_without_it_and_warns_where_it_cannot_run(monkeypatch, cfg):
    monkeypatch.setattr(sandbox, "probe", lambda *a: "zz no namespaces")
    with pytest.warns(UserWarning, match="zz no namespaces"):
        r = build.build(NAIVE, dataclasses.replace(cfg.build, sandbox="auto"))
    assert r.ok


def test_the_probe_says_why_without_unshare(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert sandbox.probe.__wrapped__("nvcc", (), str(tmp_path / "root")) == "util-linux unshare is not installed"
