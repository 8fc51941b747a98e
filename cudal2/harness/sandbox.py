"""The compiler's sandbox: an untrusted build's compiler sees the toolchain, the allowed headers and
its own build folder, and nothing else of the machine.

Guarantees, where `probe` finds it works: `wrap(cmd, work, ...)` is a command that runs `cmd` in new
user, mount, PID, network, IPC and UTS namespaces (util-linux `unshare`, no privilege needed where
user namespaces are allowed), chrooted into a fresh tmpfs holding only
- read-only bind mounts of the system's program and library folders (`SYSTEM`: /usr, /bin, /lib…,
  the dynamic loader's cache, /dev/null and its like), of the toolkit's folders (what nvcc's own
  profile names: `toolkit_dirs`), of the host compiler's prefix, and of the allowed include folders;
- the build folder `work`, read-write, at its own path (so the binary is the one an open build makes:
  the compiler sees the same paths);
- no /proc, /sys, /etc (beyond the loader's files), /home, /root, /tmp, /var, no project checkout,
  no other build's folder, no network;
with an environment of PATH, HOME and TMPDIR (the build folder), SOURCE_DATE_EPOCH and LC_ALL=C.
Whatever a source makes the preprocessor, cicc or ptxas open, stat or wait on (reviews 44-50 found
such routes one spelling at a time: `__has_include`, `#pragma GCC dependency`, a `#` gcc passes on
to cicc, an allowed header's computed include, a PTX `.file`), it can reach only files that every
machine with the toolkit has. The compiler is PID 1's only child tree of its namespace: killing the
build's process group (its timeout) ends every process in it (`--kill-child`).

Does not: hide what is under /usr (system headers, documentation: the same on every machine); limit
memory, time or output (`build.bounded`, `bounded_run` do); run where user namespaces are refused
(some distributions restrict them, some containers' seccomp filters too): `probe` says why, and the
build then runs unsandboxed with a warning or refuses, as `BuildConfig.sandbox` says.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

# Folders every toolchain run needs; those missing on a machine are skipped (merged-/usr systems
# have /bin, /lib… as symlinks, which the sandbox copies as symlinks).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache", "/etc/alternatives",
          "/dev/null", "/dev/zero", "/dev/urandom")
UNSHARE = ("unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child", "--net", "--ipc",
           "--uts")

# Run by `sh` inside the new namespaces, as root of the user namespace only. Arguments: the new
# root's mount point, the build folder, the read-only paths, "--", the command. The last `exec`
# makes the chrooted command PID 1's process itself, so no process of the namespace keeps the
# machine's root as its root.
_SETUP = r"""
set -e
R=$1; W=$2; shift 2
mount -t tmpfs -o size=4m,mode=755 cudal2-sandbox "$R"
while [ "$1" != -- ]; do
  p=$1; shift
  if [ -L "$p" ]; then mkdir -p "$R$(dirname "$p")"; ln -s "$(readlink "$p")" "$R$p"
  elif [ -d "$p" ]; then mkdir -p "$R$p"; mount --rbind -o ro "$p" "$R$p"
  elif [ -e "$p" ]; then mkdir -p "$R$(dirname "$p")"; : > "$R$p"; mount --bind -o ro "$p" "$R$p"
  fi
done
shift
mkdir -p "$R$W"; mount --bind "$W" "$R$W"
exec chroot "$R" /usr/bin/env -i PATH="$PATH" HOME="$W" TMPDIR="$W" SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" LC_ALL=C \
    /bin/sh -c 'cd "$0" && exec "$@"' "$W" "$@"
"""

_PROFILE_LINE = re.compile(r"^#\$ (?:TOP|CICC_PATH|NVVMIR_LIBRARY_DIR|INCLUDES|SYSTEM_INCLUDES|LIBRARIES)=(.*)$", re.M)
_ABS_PATH = re.compile(r"(/[^\s\"':]+)")


class Unavailable(RuntimeError):
    """The sandbox cannot run here; the message says why, in one line."""


@functools.cache
def toolkit_dirs(nvcc: str) -> tuple[str, ...]:
    """The folders nvcc's profile points its stages at (TOP, cicc's, libdevice's, the include and
    library folders), resolved, plus the prefix of nvcc itself: a wrapper script (as in a package's
    /usr/local/bin/nvcc) and a pip toolkit under site-packages both resolve to where the files are."""
    tool = shutil.which(nvcc)
    if tool is None:
        return ()
    dirs = {str(Path(os.path.realpath(tool)).parent.parent)}
    with tempfile.TemporaryDirectory() as d:   # --dryrun prints the profile; the file need not exist
        try:
            out = subprocess.run([tool, "--dryrun", "-ptx", "-arch=compute_90", "probe.cu"], cwd=d, capture_output=True,
                                 text=True, timeout=60).stderr
        except (OSError, subprocess.TimeoutExpired):
            out = ""
    for line in _PROFILE_LINE.findall(out):
        dirs.update(os.path.realpath(p) for p in _ABS_PATH.findall(line))
    return tuple(sorted(p for p in dirs if os.path.isdir(p)))


def host_compiler_dirs() -> tuple[str, ...]:
    """The prefix of the host compiler nvcc runs (gcc's preprocessor reads its own headers)."""
    found = (shutil.which(c) for c in ("gcc", "g++", "cc", "c++"))
    return tuple(sorted({str(Path(os.path.realpath(t)).parent.parent) for t in found if t}))


def read_only_paths(nvcc: str, include_dirs: list[str]) -> list[str]:
    """The paths bound read-only, each once: a folder inside another listed folder is covered by it."""
    wanted = [p for p in SYSTEM if os.path.lexists(p)]
    for p in (*toolkit_dirs(nvcc), *host_compiler_dirs(), *map(os.path.realpath, include_dirs)):
        if os.path.isdir(p) and not any(_inside(p, q) for q in wanted if not os.path.islink(q)):
            wanted.append(p)
    return wanted


def _inside(p: str, folder: str) -> bool:
    return p == folder or p.startswith(folder.rstrip("/") + "/")


def wrap(cmd: list[str], work: str, root: str, nvcc: str, include_dirs: list[str]) -> list[str]:
    """`cmd` (its program resolved on PATH) run in the sandbox, in `work`. `root` is an empty folder
    (made here if missing) the new root is mounted on inside the namespace; it stays empty outside."""
    tool = shutil.which(cmd[0])
    if tool is None:   # what Popen raises for a missing program
        raise FileNotFoundError(2, "No such file or directory", cmd[0])
    Path(root).mkdir(parents=True, exist_ok=True)
    return [*UNSHARE, "sh", "-c", _SETUP, "cudal2-sandbox", os.path.abspath(root), os.path.abspath(work),
            *read_only_paths(nvcc, include_dirs), "--", os.path.abspath(tool), *cmd[1:]]


@functools.cache
def probe(nvcc: str, include_dirs: tuple[str, ...], root: str) -> str:
    """'' where a sandboxed nvcc compiles a kernel to PTX here; else why not, in one line. Once per
    process and toolkit (about half a second)."""
    if shutil.which("unshare") is None:
        return "util-linux unshare is not installed"
    if shutil.which(nvcc) is None:
        return f"{nvcc} not found"
    with tempfile.TemporaryDirectory(prefix="sandbox-probe.") as work:
        Path(work, "probe.cu").write_text("__global__ void probe(int *x) { x[0] = 1; }\n")
        cmd = wrap([nvcc, "-ptx", "-arch=compute_90", "-o", "probe.ptx", "probe.cu"], work, root, nvcc,
                   list(include_dirs))
        try:
            r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=120,
                               stdin=subprocess.DEVNULL, env={**os.environ, "SOURCE_DATE_EPOCH": "0"})
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"the probe build did not run: {e}"
        if r.returncode != 0 or not Path(work, "probe.ptx").is_file():
            last = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
            return f"the probe build failed: {last}"
    return ""
