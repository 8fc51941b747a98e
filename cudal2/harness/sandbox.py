"""The compiler's sandbox: an untrusted build's compiler sees the toolchain, the allowed headers and
its own build folder, and nothing else of the machine.

Guarantees, where `probe` finds it works: `wrap(cmd, work, ...)` is a command that runs `cmd` in new
user, mount, PID, network, IPC and UTS namespaces (util-linux `unshare`, no privilege needed where
user namespaces are allowed), chrooted into a fresh tmpfs holding only
- read-only bind mounts of the system's program and library folders (`SYSTEM`: /usr, /bin, /lib…,
  the dynamic loader's cache, /dev/null and its like), of the toolkit's folders (those nvcc's own
  profile points its stages at: `toolkit_dirs`; not the toolkit's prefix), of the host compiler's
  prefix (as gcc reports it), of the allowed include folders, and of the programs run (nvcc or
  ptxas, gcc, g++), each at the path the compiler is given or the open build runs it by, the links
  on the way copied (a wrapper script is shown as itself, never its folder's parent); every mount
  in it is read-only, those a bound folder holds included;
- the build folder `work`, read-write, at its own path (so the binary is the one an open build makes:
  the compiler sees the same paths);
- no /proc, /sys, /etc (beyond the loader's files), /home, /root, /tmp, /var, no project checkout,
  no other build's folder, no network, never the whole of /: wherever a shown folder shows the
  home folder or the folder of the build folder (the build cache), an empty folder hides it, a
  shown folder inside a hidden one included (`layout`);
with an environment of PATH, HOME and TMPDIR (the build folder), SOURCE_DATE_EPOCH, TZ=UTC0 and
LC_ALL=C, and, where util-linux `setpriv` is installed, no capability (the mount namespace still
holds the machine's root below the chroot; without capabilities neither chroot(2) nor a mount of
its own leaves it). Whatever a source makes the preprocessor, cicc or ptxas open, stat or wait on
(reviews 44-50 found such routes one spelling at a time: `__has_include`, `#pragma GCC dependency`,
a `#` gcc passes on to cicc, an allowed header's computed include, a PTX `.file`), it can reach only
files that every machine with the toolkit has. The compiler is PID 1's only child tree of its
namespace: killing the build's process group (its timeout) ends every process in it
(`--kill-child`). The setup finds mount and chroot in /usr/sbin whatever the caller's PATH.

Does not: hide what is under /usr (system headers, documentation, and whatever else a machine
installs there, a system-wide site-packages included) or inside the host compiler's prefix (a gcc
installed in a conda environment shows the environment, site-packages and conda-meta with it) or
the toolkit's own folders (nvcc's bin folder: in a conda environment, every program of it); hide a
private folder other than those two (a results db or checkout inside a shown folder is shown), or
one the machine mounts again inside a shown folder (it compares paths: a bind mount of the home
folder under /usr shows it there);
limit memory, time or output (`build.bounded`, `bounded_run` do); give the compiler the caller's
environment (NVCC_PREPEND_FLAGS, NVCC_CCBIN, CPATH and the like reach an open build only); run
where user namespaces are refused (some distributions restrict them, some containers' seccomp
filters too): `probe` says why, and the build then runs unsandboxed with a warning or refuses, as
`BuildConfig.sandbox` says (its answer is kept for the process: a probe that failed for a passing
reason, a namespace limit reached or a timeout on a busy machine, leaves 'auto' building open
until the process ends).
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
# root's mount point, the build folder, what to show (tagged, in order: `d` a folder bound read-only
# with what is mounted under it, `f` a file bound read-only, `h` a private folder hidden under an
# empty one), "--", the symbolic links to copy, "--", the command. The links come last, after every
# folder is made: `mkdir -p` through a copied link would follow its target on the machine's own
# root. The last `exec` makes the chrooted command PID 1's process itself, so no process of the
# namespace keeps the machine's root as its root.
_SETUP = r"""
set -e -f
trap 'echo "cudal2-sandbox: not set up" >&2; exit 125' EXIT   # (SETUP_FAILED; a successful exec runs no trap)
R=$1; W=$2; shift 2
P=$PATH; PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH   # mount, chroot: /usr/sbin is not on every user's PATH
mount -t tmpfs -o size=4m,mode=755 cudal2-sandbox "$R"
while [ "$1" != -- ]; do
  p=${1#?}
  case $1 in
  d*) mkdir -p "$R$p"; mount --rbind -o ro "$p" "$R$p" ;;
  f*) mkdir -p "$R${p%/*}"; : > "$R$p"; mount --bind -o ro "$p" "$R$p" ;;
  h*) mount -t tmpfs -o size=1m,mode=755 cudal2-hidden "$R$p" ;;
  esac
  shift
done
shift
mkdir -p "$R$W"
while [ "$1" != -- ]; do
  mkdir -p "$R${1%/*}"; ln -s "$(readlink "$1")" "$R$1"; shift
done
shift
# `mount --rbind -o ro` makes the bound folder read-only but not the mounts under it (util-linux
# changes no option recursively): every mount of the new root is made read-only here, the root's
# own tmpfs too, and only then is the build folder bound, writable (a mount whose path is gone is
# shadowed by a hidden folder: nothing reaches it)
for m in $(cut -d' ' -f5 /proc/self/mountinfo); do
  case $m in *\\*) m=$(printf %b "$m") ;; esac   # mountinfo writes a space as \040
  case $m in "$R"|"$R"/*) [ ! -e "$m" ] || mount -o remount,bind,ro "$m" ;; esac
done
mount --bind "$W" "$R$W"
# the compiler keeps no capability of the namespace's root (the mount namespace still holds the
# machine's root under the chroot: with CAP_SYS_CHROOT, chroot(2) leaves it; with CAP_SYS_ADMIN, a
# mount of its own proc): util-linux setpriv, where installed, empties the bounding set before exec
D=
[ -x "$R/usr/bin/setpriv" ] && D="/usr/bin/setpriv --bounding-set=-all --inh-caps=-all --no-new-privs --"
exec chroot "$R" $D /usr/bin/env -i PATH="$P" HOME="$W" TMPDIR="$W" SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" TZ=UTC0 \
    LC_ALL=C /bin/sh -c 'cd "$0" && exec "$@"' "$W" "$@"
"""

SETUP_FAILED = 125   # the setup's exit status where it failed before the command ran


def not_set_up(rc: int | None, out: str) -> str:
    """Why a wrapped command failed before it ran, in one line ('' where it ran): unshare refused
    (its message comes first), or the setup failed (SETUP_FAILED, its message last). Such a failure
    is the machine's, not the command's: a build must not keep it as the source's verdict."""
    lines = out.strip().splitlines()
    if rc == SETUP_FAILED and lines and lines[-1] == "cudal2-sandbox: not set up":
        return lines[0] if len(lines) > 1 else lines[-1]
    if rc not in (None, 0) and re.match(r"(\S*/)?unshare: ", out):   # (getopt names it by its path)
        return lines[0]
    return ""


# What nvcc's stages read, from its profile: nvcc's own folder (its profile, ptxas), cicc's, libdevice's
# and the include folders. Not TOP, the toolkit's prefix (where nvcc sits in $PREFIX/bin, as in a
# conda environment, TOP is the environment: its site-packages, conda-meta/state with the variables
# `conda env config vars` set, and so on; review 51), nor LIBRARIES (nothing is linked).
_PROFILE_LINE = re.compile(r"^#\$ (?:_HERE_|CICC_PATH|NVVMIR_LIBRARY_DIR|INCLUDES|SYSTEM_INCLUDES)=(.*)$", re.M)
_ABS_PATH = re.compile(r"(/[^\s\"':]+)")


@functools.cache
def toolkit_dirs(nvcc: str) -> tuple[str, ...]:
    """The folders nvcc's profile points its stages at (`_PROFILE_LINE`), as nvcc spells them (`layout`
    resolves them, showing the links on the way): where the files are, for a wrapper script (as in a
    package's /usr/local/bin/nvcc) and a pip toolkit under site-packages alike. Not the wrapper's own
    prefix: a wrapper in ~/bin made it the home folder, the build cache and all (review 51); the
    program file itself is shown (`wrap`)."""
    tool = shutil.which(nvcc)
    if tool is None:
        return ()
    dirs = set()
    with tempfile.TemporaryDirectory() as d:   # --dryrun prints the profile; the file need not exist
        try:
            out = subprocess.run([tool, "--dryrun", "-ptx", "-arch=compute_90", "probe.cu"], cwd=d, capture_output=True,
                                 text=True, timeout=60).stderr
        except (OSError, subprocess.TimeoutExpired):
            out = ""
    for line in _PROFILE_LINE.findall(out):
        dirs.update(_ABS_PATH.findall(line))
    return tuple(sorted(p for p in dirs if os.path.isdir(p)))


HOST_COMPILERS = ("gcc", "g++")   # what nvcc runs, found on PATH (in the sandbox too)


def host_compiler_dirs() -> tuple[str, ...]:
    """The prefix of each host compiler nvcc runs (gcc's preprocessor reads its own headers), as the
    compiler itself reports it (`-print-search-dirs`), so a wrapper script's folder is not taken for
    it (a wrapper in ~/bin made the prefix the home folder; review 51)."""
    return tuple(sorted({d for c in HOST_COMPILERS if (t := shutil.which(c)) and (d := _gcc_prefix(t))}))


@functools.cache
def _gcc_prefix(tool: str) -> str:
    try:
        out = subprocess.run([tool, "-print-search-dirs"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    m = re.search(r"^install: (.*?)/lib(?:64)?/gcc/", out, re.M)
    return os.path.realpath(m.group(1)) if m else str(Path(os.path.realpath(tool)).parent.parent)


def _links(path: str) -> tuple[list[str], str | None]:
    """(the symbolic links met resolving the absolute `path`, each named by a path of folders that
    are not links, in order; the path it resolves to, or None where it resolves to nothing: past
    MAX_LINKS links, as a loop of links is, the kernel refuses it (ELOOP), and so does the
    compiler. It was the folder reached when the count ran out, shown whole: an include folder
    named through a loop in /tmp/x showed /tmp/x, every file beside the loop; review 52)."""
    links: list[str] = []
    done, todo = "/", [c for c in path.split("/") if c]
    while todo:
        c = todo.pop(0)
        if c == "..":
            done = os.path.dirname(done)
        elif c != ".":
            here = os.path.join(done, c)
            if not os.path.islink(here):
                done = here
                continue
            if len(links) == MAX_LINKS:
                return links, None
            links.append(here)
            target = os.readlink(here)
            done = "/" if target.startswith("/") else done
            todo[:0] = [t for t in target.split("/") if t]
    return links, done


MAX_LINKS = 40   # links one path may go through (Linux's MAXSYMLINKS)


def layout(nvcc: str, include_dirs: list[str], programs: list[str], private: list[str]) -> tuple[list[str], list[str]]:
    """(what `_SETUP` shows, tagged and in order; the symbolic links it copies). Shown: `SYSTEM`, the
    host compilers' prefixes, and the toolkit's folders, `include_dirs` and each of `programs` (nvcc
    or ptxas, gcc, g++) at the path the compiler is given or the open build runs it by, links and all
    (a toolkit reached through a linked folder, /opt/cuda -> /opt/cuda-12.8, was missing; a ~/bin/gcc
    link to another gcc was another compiler in the sandbox; an include folder named through a
    venv's lib64 link was missing; review 51), never / (which would show /proc, /home and the
    rest), nor a path that does not resolve (a loop of links). Each `private` folder (the home
    folder, the build cache) is hidden under an empty one wherever a shown folder shows it.

    One rule, outer paths first (at one path, the folder before its hiding): a folder is bound
    where nothing bound shows it yet, a private folder hidden where a bound folder shows it, then
    each file and link put where no bound folder shows it. So a folder shown inside a hidden one
    (an include folder in the home folder, where /usr holds the home folder) is bound after the
    hiding, and a private folder inside that one is hidden again: the rule of review 51 hid only
    the outermost private folder and bound such folders after it, and a build cache inside a
    folder shown from the hidden home folder was there whole, every other build's source and
    verdict with it (review 52)."""
    links, files, dirs = [p for p in SYSTEM if os.path.islink(p)], [], []
    for p in SYSTEM:
        if os.path.isdir(p) and not os.path.islink(p):
            dirs.append(p)
        elif os.path.exists(p) and not os.path.islink(p):
            files.append(p)
    dirs += host_compiler_dirs()
    for into, paths in ((dirs, (*toolkit_dirs(nvcc), *include_dirs)), (files, programs)):
        for p in paths:   # shown at the path the compiler is given
            chain, real = _links(os.path.abspath(p))
            if real is not None:
                links += chain
                into.append(real)
    dirs = [p for p in dict.fromkeys(dirs) if p != "/" and os.path.isdir(p)]
    files = [p for p in dict.fromkeys(files) if os.path.exists(p) and not os.path.isdir(p)]
    hidden = {h for h in (os.path.realpath(p) for p in private if p) if h != "/" and os.path.isdir(h)}
    ops: list[str] = []

    def bound(p: str) -> bool:   # the innermost folder op so far that holds p binds a folder
        holding = [op[0] for op in ops if op[0] in "dh" and _inside(p, op[1:])]
        return bool(holding) and holding[-1] == "d"

    for p, tag in sorted([(p, "d") for p in dirs] + [(h, "h") for h in hidden], key=lambda t: (len(t[0]), t[1], t[0])):
        if bound(p) == (tag == "h"):   # a folder where none shows it; a hiding where one does
            ops.append(tag + p)
    ops += [f"f{p}" for p in files if not bound(p)]
    return ops, [p for p in dict.fromkeys(links) if not bound(p)]


def _inside(p: str, folder: str) -> bool:
    return p == folder or p.startswith(folder.rstrip("/") + "/")


def wrap(cmd: list[str], work: str, root: str, nvcc: str, include_dirs: list[str]) -> list[str]:
    """`cmd` (its program resolved on PATH) run in the sandbox, in `work`. `root` is an empty folder
    (made here if missing) the new root is mounted on inside the namespace; it stays empty outside.
    The folder holding `work` (the build cache, in a build), `root`'s and the home folder are
    private: hidden where a shown folder holds them."""
    tool = shutil.which(cmd[0])
    if tool is None:   # what Popen raises for a missing program
        raise FileNotFoundError(2, "No such file or directory", cmd[0])
    Path(root).mkdir(parents=True, exist_ok=True)
    work = os.path.abspath(work)
    programs = [tool, *(t for c in HOST_COMPILERS if (t := shutil.which(c)))]
    private = [os.path.expanduser("~"), os.path.dirname(work), os.path.dirname(os.path.abspath(root))]
    ops, copies = layout(nvcc, include_dirs, programs, private)
    # the root resolved: the read-only pass finds its mounts in /proc/self/mountinfo, which names resolved paths
    return [*UNSHARE, "sh", "-c", _SETUP, "cudal2-sandbox", os.path.realpath(root), work, *ops, "--", *copies, "--",
            os.path.abspath(tool), *cmd[1:]]


PROBE_SOURCE = 'extern "C" __global__ void probe(int *x) { x[0] = 1; }\n'   # the least kernel nvcc and ptxas build


@functools.cache
def probe(nvcc: str, include_dirs: tuple[str, ...], root: str, commands: tuple[tuple[str, ...], ...] = (),
          source: str = PROBE_SOURCE) -> str:
    """'' where `commands` (a build's own, run in order in a folder holding `source` as `kernel.cu`;
    by default nvcc to PTX) all succeed in the sandbox here; else why not, in one line. Given the
    build's commands, and a source that includes from `include_dirs`, the probe fails where a build
    would (ptxas found elsewhere than nvcc, a flag's host compiler, an include folder not there), so
    the build runs open or is refused as `build.sandbox` says, instead of every build failing, and
    caching that, in a sandbox that cannot run it. Once per process and toolkit (about half a
    second)."""
    if shutil.which("unshare") is None:
        return "util-linux unshare is not installed"
    if shutil.which(nvcc) is None:
        return f"{nvcc} not found"
    commands = commands or ((nvcc, "-ptx", "-arch=compute_90", "-o", "kernel.ptx", "kernel.cu"),)
    with tempfile.TemporaryDirectory(prefix="sandbox-probe.") as work:
        Path(work, "kernel.cu").write_text(source)
        for c in commands:
            try:
                r = subprocess.run(wrap(list(c), work, root, nvcc, list(include_dirs)), cwd=work, capture_output=True,
                                   text=True, timeout=120, stdin=subprocess.DEVNULL,
                                   env={**os.environ, "SOURCE_DATE_EPOCH": "0"})
            except (OSError, subprocess.TimeoutExpired) as e:
                return f"the probe build did not run: {e}"
            if r.returncode != 0:
                last = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
                return f"the probe build failed: {last}"
    return ""
