"""Build: candidate source -> binary artifact (a cubin for contract v2, a shared library for
trusted v1 host code), with a content-keyed cache and parallel jobs.

Guarantees:
- the static policy runs first; a rejected source is never compiled, and the reason is kept;
- a v2 source (one with a launch spec) is compiled as device code only (`nvcc -ptx`, then
  `ptxas` to a cubin: no host pass, no `-rdc`); its spec must validate and its cubin must pass
  `cubin.violations` (no writable globals, no unresolved symbols, every spec kernel an entry),
  and its machine code `constbank.violations` (constant reads only of its parameters and the
  driver words ptxas reads for special registers; `paramflow` and `sassdesc` on the same listing:
  every memory descriptor the driver's or a createpolicy word on every path);
  the cubin is built from canonical PTX, so its bytes, and `device_sha256`, are the same for the
  same source, flags and toolkit in any folder on any machine, at any time: every build sees one
  fixed date (`SOURCE_DATE_EPOCH`, and the source file's mtime for `__TIMESTAMP__`) in one time
  zone (TZ=UTC0: gcc prints `__TIMESTAMP__` in local time; review 51), so no source can build to
  one kernel when judged and to another when `cudal2 library build` rebuilds it later (a `__DATE__`
  test did; review 44);
- the cache key is a hash of the source, the flags, the archs, the memory limit, the build's date,
  the nvcc version, the CUTLASS headers' version and the build's rules (`rules_version`), so a hit
  is exactly what the same build would produce under the same rules;
- every build has its own folder and its own timeout; a build past it is killed with its whole
  process group (nvcc's cicc and ptxas children included) and fails, and so is one whose compiler
  prints more than MAX_LOG_MB (its output is read into this process: 1.6 GB of `#pragma message`
  remarks from 40 lines of macros; review 45); the compiler's temporary
  files live in that folder, so a killed build leaves none behind, and a failed build's cached
  folder keeps only its source, verdict and log (nvcc killed at the output limit left its 0.5 GB
  preprocessed file there; review 45); a v2 (untrusted) build's
  compiler processes also have `max_memory_mb` of address space each and files of at most
  MAX_FILE_MB (a few macro lines expand to a preprocessed file of gigabytes, and cicc took ~30
  bytes of memory per byte of it: one candidate could take the machine's memory, trainer and
  all, within the timeout; review 44);
- a v2 build's PTX is read into this process, and scanned by the PTX rules (Python, outside the
  compiler's timeout), only when it is at most MAX_PTX_MB: inline asm of comment lines unrolled made
  528 MB of PTX from 20 lines of source in seconds, then 49 s and 1.6 GB of the caller's process
  (the trainer's, in the reward service; a thread per core) before the kernel built and passed
  (review 46);
- a v2 build's compiler (nvcc, then ptxas) runs in `sandbox`: it sees the toolkit, the allowed
  headers and its own build folder, nothing else of the machine, so no spelling of a source can
  make it read, stat or wait on a host file (`BuildConfig.sandbox`: where the sandbox cannot run,
  'auto' builds without it and warns, 'on' refuses); whether it can is probed once per process
  with the build's own commands (flags, ptxas), and the answer is part of the build's key and of
  the stored verdict's (`evaluate.result_key`); a sandbox that then fails to start, or one 'on'
  refuses, fails the build with `infra` set (the machine's fault, not the source's): cached
  nowhere, as a timeout is not in the build cache, and stored nowhere as the source's verdict;
- the ptxas resource report (registers, shared memory, barriers, stack, spills per entry
  function) and the compiler's output are artifacts of the result, cached with the library.

Does not: load or run anything it builds (see `worker.py`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from cudal2 import bounded_run
from cudal2.config import BuildConfig
from cudal2.harness import constbank, cubin, launch, paramflow, policy, sandbox, sassdesc
from cudal2.sass import tools


@dataclass
class BuildResult:
    ok: bool
    key: str
    stage: str                 # "policy" or "build": where it stopped when not ok
    lib_path: str = ""
    reason: str = ""
    log: str = ""              # compiler output (trimmed)
    resources: dict[str, dict[str, int]] = field(default_factory=dict)  # entry -> registers, smem...
    device_sha256: str = ""    # hash of the device code (the cubin; the .so's fatbin for v1)
    kind: str = "shared_object"  # "cubin" (contract v2) or "shared_object" (v1 host code)
    spec: dict | None = None   # the v2 launch spec (launch.LaunchSpec.to_dict())
    cached: bool = False
    seconds: float = 0.0
    # The machine's failure, not the source's (the sandbox refused or did not start): kept by no
    # cache, the build's, the results db's (`Evaluator.evaluate`) or the reward service's, and worth
    # no reward. Review 51 kept it out of the build cache only: the results db stored it as the
    # source's verdict, reused on every resumed run, and the reward service gave it the floor and
    # kept that for the run (review 52).
    infra: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


@functools.lru_cache(maxsize=None)
def nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.search(r"release ([\d.]+), V([\d.]+)", out)
    return m.group(2) if m else out.strip().splitlines()[-1] if out.strip() else ""


@functools.lru_cache(maxsize=None)
def cutlass_include() -> str | None:
    """The CUTLASS/CuTe include folder shipped by the nvidia-cutlass wheel, if installed."""
    try:
        import cutlass_library
    except ImportError:
        return None
    inc = Path(cutlass_library.__file__).parent / "source" / "include"
    return str(inc) if (inc / "cute").is_dir() else None


@functools.lru_cache(maxsize=None)
def cutlass_version() -> str:
    """What the cache key knows of the CUTLASS headers: their version file's hash, not their folder,
    so a cache built on one machine is valid on another with the same wheel installed elsewhere."""
    inc = cutlass_include()
    if inc is None:
        return ""
    return hashlib.sha256((Path(inc) / "cutlass" / "version.h").read_bytes()).hexdigest()[:16]


def sandbox_state(cfg: BuildConfig) -> tuple[str, str]:
    """How this machine runs a v2 build's compiler: ("sandboxed", ""), ("open", why) or ("refused",
    why) (`cfg.sandbox` is 'on' and the sandbox cannot run here). Part of the cache key: a verdict
    reached by an open build is not reused where the compiler is sandboxed."""
    if cfg.sandbox == "off":
        return "open", "build.sandbox is 'off'"
    if shutil.which(cfg.nvcc) is None:   # the build fails on that, sandbox or not
        return "open", f"{cfg.nvcc} not found"
    # The build's own commands, flags and ptxas included, on a source that reads a CUTLASS header (a
    # probe of nvcc alone passed where every build then failed in the sandbox, cached as the
    # candidate's failure; review 51). One probe at a time: build_many's threads asked at once, each
    # probed, and a key could be made from one thread's answer and the build run on another's.
    source = ("#include <cutlass/version.h>\n" if cutlass_include() else "") + sandbox.PROBE_SOURCE
    with _PROBE_LOCK:
        why = sandbox.probe(cfg.nvcc, _include_dirs(cfg), _sandbox_root(cfg),
                            tuple(tuple(c) for c in v2_commands(cfg, "kernel.cu")), source)
    if not why:
        return "sandboxed", ""
    if cfg.sandbox == "on":
        return "refused", why
    _warn_open(why)
    return "open", why


_PROBE_LOCK = threading.Lock()


def _include_dirs(cfg: BuildConfig | None = None) -> tuple[str, ...]:
    """The include folders a v2 build's compiler is shown beyond the toolkit's: CUTLASS's, and the
    absolute ones `cfg.flags` name (-I, -isystem, --include-path, --system-include; a relative one
    is inside the build folder). With `-I /opt/inc` in build.flags and its headers in
    build.extra_headers, every build that included one failed in the sandbox, 'No such file', and
    was cached as the source's verdict, while the probe (which includes none) passed and an open
    build, the library's rebuild say, passed: one source, two verdicts by machine (review 52)."""
    dirs = [inc] if (inc := cutlass_include()) else []
    flags = list(cfg.flags) if cfg else []
    for flag, after in zip(flags, flags[1:] + [""]):
        if flag in ("-I", "-isystem", "--include-path", "--system-include"):
            dirs.append(after)
        elif m := re.fullmatch(r"(?:-I|-isystem|--include-path=|--system-include=)=?(.+)", flag):
            dirs.append(m.group(1))
    return tuple(d for d in dict.fromkeys(dirs) if os.path.isabs(d))


def _sandbox_root(cfg: BuildConfig) -> str:   # the empty folder each sandbox mounts its root on
    return str(cache_root(cfg) / ".sandbox")


@functools.cache
def _warn_open(why: str) -> None:   # once per process and reason
    warnings.warn(f"cudal2: untrusted builds run without the compiler's sandbox ({why}); build.sandbox = 'on' "
                  "refuses them instead, 'off' silences this", stacklevel=4)


def cache_root(cfg: BuildConfig) -> Path:
    if cfg.cache_dir:
        return Path(cfg.cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cudal2" / "build"


def nvcc_command(cfg: BuildConfig, src: str, out: str) -> list[str]:
    cmd = [cfg.nvcc, "-shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v", *cfg.flags]
    for arch in cfg.archs:
        cmd.append(f"-gencode=arch=compute_{arch[3:]},code={arch}")
    if inc := cutlass_include():
        cmd += ["-I", inc]
    return cmd + ["-o", out, src]


def v2_commands(cfg: BuildConfig, src: str) -> tuple[list[str], list[str]]:
    """(nvcc -> kernel.ptx, ptxas -> kernel.cubin). -lineinfo is left out: it writes the build
    folder's path into the binary. One arch: the first of `cfg.archs` (the cubin is per arch)."""
    arch = cfg.archs[0]
    flags = [f for f in cfg.flags if f not in ("-lineinfo", "--generate-line-info")]
    opt = [f for f in flags if re.fullmatch(r"-O\d", f)] or ["-O3"]
    nvcc = [cfg.nvcc, "-ptx", f"-arch=compute_{arch[3:]}", *flags]
    if inc := cutlass_include():
        nvcc += ["-I", inc]
    ptxas = [str(Path(cfg.nvcc).with_name("ptxas")) if os.sep in cfg.nvcc else "ptxas", f"-arch={arch}", opt[0], "-v",
             "kernel.ptx", "-o", "kernel.cubin"]
    return nvcc + ["-o", "kernel.ptx", src], ptxas


def rule_files() -> list[Path]:
    """The modules whose rules decide what a build accepts, this one included: its own limits
    (MAX_PTX_MB, MAX_LOG_MB, MAX_FILE_MB) refuse builds too, and a passing verdict cached before a
    limit was added (the PTX bomb's, review 46) was reused under it."""
    from cudal2.sass import cubin as sass_cubin, disasm, tools
    return [Path(m.__file__) for m in (policy, launch, cubin, constbank, paramflow, sassdesc, sass_cubin, disasm,
                                       tools, bounded_run, sandbox)] + [Path(__file__)]


@functools.cache
def rules_version() -> str:
    """A hash of `rule_files`: a cached verdict is reused only under the rules that reached it (a rule
    added later must see old sources again)."""
    from cudal2.sass import tools
    h = hashlib.sha256()
    for f in rule_files():
        h.update(f.read_bytes())
    try:   # the disassembler reads the machine code the rule judges
        h.update(tools.version("nvdisasm").encode())
    except (tools.ToolMissing, tools.ToolFailed):
        pass   # every build then fails closed at the machine-code rule
    return h.hexdigest()[:16]


def build_key(source: str, cfg: BuildConfig) -> str:
    h = hashlib.sha256()
    for part in (source, json.dumps([cfg.flags, cfg.archs, cfg.max_memory_mb, BUILD_EPOCH, sandbox_state(cfg)[0]]),
                 nvcc_version(cfg.nvcc), cutlass_version(), rules_version()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")


def parse_ptxas(log: str) -> dict[str, dict[str, int]]:
    """ptxas -v output -> {"entry@arch": {registers, barriers, smem, stack, spill_stores, spill_loads}}."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current = f"{m.group(1)}@{m.group(2)}"
            out[current] = {}
        elif current and (m := _PROPS.search(line)):
            out[current].update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        elif current and (m := _USED.search(line)):
            out[current].update(registers=int(m.group(1)), barriers=int(m.group(2) or 0), smem=int(m.group(3) or 0))
    return out


def device_code_sha256(lib_path: str) -> str:
    """sha256 of the library's `.nv_fatbin` ELF section: the device code alone. nvcc names its
    temporary files after the process id, so the host part of a library differs between two builds
    of the same source; the fatbin does not, so this hash is what identifies a kernel binary."""
    import struct
    data = Path(lib_path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError(f"{lib_path}: not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def section(i):
        name, _, _, _, off, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        return name, off, size
    _, stroff, _ = section(shstrndx)
    for i in range(shnum):
        name, off, size = section(i)
        end = data.index(b"\0", stroff + name)
        if data[stroff + name:end] == b".nv_fatbin":
            return hashlib.sha256(data[off:off + size]).hexdigest()
    raise ValueError(f"{lib_path}: no .nv_fatbin section (no device code)")


def _trim(text: str, limit: int = 6000) -> str:
    return text if len(text) <= limit else text[: limit // 3] + "\n...\n" + text[-2 * limit // 3:]


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if " error" in line or line.startswith("error") or "fatal" in line:
            return line.strip()
    return log.strip().splitlines()[-1] if log.strip() else "nvcc failed"


MAX_FILE_MB = 2048   # largest file a v2 build's compiler may write (an honest one writes a few MB)
MAX_LOG_MB = 8       # most compiler output a build keeps (an honest one prints a few kB; past it: killed)
MAX_PTX_MB = 32      # largest PTX a v2 build reads and scans (an honest one is under 1 MB; review 46)
BUILD_EPOCH = 0      # the date every build's __DATE__, __TIME__ and __TIMESTAMP__ read (1 Jan 1970)


def bounded(cmd: list[str], memory_mb: int) -> list[str]:
    """`cmd` run under the limits of an untrusted build: `memory_mb` MiB of address space and files of
    MAX_FILE_MB, set by a POSIX shell's ulimit (-v in KiB, -f in 512-byte blocks) before it execs
    `cmd`, so every child inherits them (no preexec_fn: builds run in threads)."""
    tool = shutil.which(cmd[0])
    if tool is None:   # what Popen raises for a missing program (the shell would exit 127, cached as a failure)
        raise FileNotFoundError(2, "No such file or directory", cmd[0])
    # absolute: the shell runs in the build folder, where a relative build.nvcc (bin/nvcc) is not;
    # every open build failed 'not found', cached as the source's, while `sandbox.wrap` made it
    # absolute and the sandboxed build passed (review 52)
    return ["sh", "-c", f'ulimit -v {memory_mb * 1024} && ulimit -f {MAX_FILE_MB * 2048} && exec "$@"', "sh",
            os.path.abspath(tool), *cmd[1:]]


def _run_killable(cmd: list[str], cwd: str, timeout: float) -> tuple[int | None, str]:
    """(returncode or None on timeout, combined output). The output is decoded with undecodable
    bytes replaced: the compiler echoes a candidate's bytes (`#pragma message("\\xff")` prints a raw
    0xff), and a strict decode raised UnicodeDecodeError out of build(), build_many and the reward
    service's whole batch (review 43). Its stdin is /dev/null, never the caller's (a source that
    reached `/dev/stdin` past the include rule would read the trainer's; review 44). At most
    MAX_LOG_MB of output is kept: past it the process group is killed and the run fails with an
    error saying so (a failure, cached like any: the same source floods again). Macros made 8192
    `#pragma message` remarks of 64 KiB: 1.6 GB of diagnostics in 56 s, read whole into the
    caller's memory (4.7 GB at its peak, one build a core beside the trainer), and into the cache's
    build.log, of a kernel that then built and passed (review 45)."""
    # nvcc's temporaries go with the build's folder; __DATE__ and __TIME__ are the build's fixed date,
    # and __TIMESTAMP__ (the source's mtime, which gcc prints in local time) reads it in UTC: under
    # the machine's TZ it read 19:00 in New York and 00:00 in the sandbox, one source two kernels
    # (review 51)
    env = {**os.environ, "TMPDIR": os.path.abspath(cwd), "SOURCE_DATE_EPOCH": str(BUILD_EPOCH), "TZ": "UTC0"}
    r = bounded_run.run(cmd, timeout=timeout, max_bytes=MAX_LOG_MB << 20, cwd=cwd, env=env, merge_stderr=True)
    out = r.out.decode(errors="replace")
    if r.over:
        return -signal.SIGKILL, f"error: the compiler wrote more than {MAX_LOG_MB} MiB of output (killed)\n{out}"
    return r.rc, out


def build(source: str, cfg: BuildConfig) -> BuildResult:
    t0 = time.monotonic()
    key = build_key(source, cfg)
    try:
        spec = launch.parse(source)
    except launch.SpecError as e:
        return BuildResult(False, key, "build", reason=f"launch spec: {e}", seconds=time.monotonic() - t0)
    found = policy.check_device_only(source, cfg.extra_headers) if spec else policy.check(source, cfg.extra_headers)
    if found:
        return BuildResult(False, key, "policy", reason=policy.reason(found),
                           log="\n".join(map(str, found)), seconds=time.monotonic() - t0)
    folder = cache_root(cfg) / key
    meta = folder / "build.json"
    if meta.is_file():
        try:
            res = BuildResult(**json.loads(meta.read_text()))
            if not res.ok or Path(res.lib_path).is_file():
                res.cached, res.seconds = True, time.monotonic() - t0
                return res
        except (ValueError, TypeError):
            pass  # a damaged cache entry is rebuilt
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=folder.parent))
    (work / "kernel.cu").write_text(source)
    os.utime(work / "kernel.cu", (BUILD_EPOCH, BUILD_EPOCH))   # __TIMESTAMP__ (the file's mtime)
    try:
        rc, log, res = _compile_v2(work, cfg, folder, spec) if spec else _compile_v1(work, cfg, folder)
    except FileNotFoundError as e:
        shutil.rmtree(work, ignore_errors=True)
        return BuildResult(False, key, "build", reason=f"compiler not found: {e.filename or cfg.nvcc}",
                           seconds=time.monotonic() - t0)
    res.key = key
    res.seconds = time.monotonic() - t0
    if not res.ok:   # a failure caches its verdict, not what the compiler left (a killed nvcc's temporaries)
        for f in work.iterdir():
            if f.name != "kernel.cu":
                shutil.rmtree(f) if f.is_dir() and not f.is_symlink() else f.unlink()
    (work / "build.json").write_text(json.dumps(res.to_dict()))
    (work / "build.log").write_text(log)
    if rc is not None:  # timeouts are not cached: the machine may just have been busy
        try:
            work.rename(folder)
        except OSError:  # another build of the same key finished first; use it
            shutil.rmtree(work, ignore_errors=True)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return res


def _compile_v1(work: Path, cfg: BuildConfig, folder: Path) -> tuple[int | None, str, BuildResult]:
    rc, log = _run_killable(nvcc_command(cfg, "kernel.cu", "libkernel.so"), str(work), cfg.timeout_s)
    if rc is None or rc != 0:
        return rc, log, _failed(rc, log, cfg)
    return rc, log, BuildResult(True, "", "build", lib_path=str(folder / "libkernel.so"), log=_trim(log),
                                resources=parse_ptxas(log),
                                device_sha256=device_code_sha256(str(work / "libkernel.so")))


def _compile_v2(work: Path, cfg: BuildConfig, folder: Path, spec: launch.LaunchSpec) -> tuple[int | None, str, BuildResult]:
    state, why = sandbox_state(cfg)
    if state == "refused":
        return None, "", BuildResult(False, "", "build", reason=f"sandbox: {why} (build.sandbox is 'on')", infra=True)
    to_ptx, to_cubin = v2_commands(cfg, "kernel.cu")
    if state == "sandboxed":
        to_ptx, to_cubin = (sandbox.wrap(c, str(work), _sandbox_root(cfg), cfg.nvcc, _include_dirs(cfg))
                            for c in (to_ptx, to_cubin))
    to_ptx, to_cubin = bounded(to_ptx, cfg.max_memory_mb), bounded(to_cubin, cfg.max_memory_mb)
    started = time.monotonic()
    rc, log = _run_killable(to_ptx, str(work), cfg.timeout_s)
    if state == "sandboxed" and (why := sandbox.not_set_up(rc, log)):
        return None, log, _unsandboxed(why, log)
    if rc is None or rc != 0:
        return rc, log, _failed(rc, log, cfg)
    ptx = work / "kernel.ptx"
    if (size := ptx.stat().st_size) > MAX_PTX_MB << 20:   # read into this process and scanned by the PTX rules
        return rc, log, BuildResult(False, "", "build", log=_trim(log),
                                    reason=f"ptx: {size >> 20} MiB of PTX, more than the {MAX_PTX_MB} MiB a build reads")
    text = cubin.canonical_ptx(ptx.read_text())
    if bad := cubin.ptx_violations(text):
        return rc, log, BuildResult(False, "", "build", reason="ptx: " + "; ".join(bad), log=_trim(log))
    ptx.write_text(text)
    rc, log2 = _run_killable(to_cubin, str(work), max(1.0, cfg.timeout_s - (time.monotonic() - started)))
    if state == "sandboxed" and (why := sandbox.not_set_up(rc, log2)):
        return None, log + log2, _unsandboxed(why, log + log2)
    log += log2
    if rc is None or rc != 0:
        return rc, log, _failed(rc, log, cfg)
    ptx.unlink()  # large, and the source it came from is kept
    data = (work / "kernel.cubin").read_bytes()
    if bad := binary_violations(work / "kernel.cubin", spec):
        # a disassembler killed at its timeout refuses the build, uncached like a build's own
        # timeout (the machine may just have been busy; review 40)
        timed_out = any(tools.TIMED_OUT in b for b in bad)
        return None if timed_out else rc, log, BuildResult(False, "", "build", reason="; ".join(bad), log=_trim(log))
    return rc, log, BuildResult(True, "", "build", lib_path=str(folder / "kernel.cubin"), log=_trim(log),
                                resources=parse_ptxas(log), device_sha256=hashlib.sha256(data).hexdigest(),
                                kind="cubin", spec=spec.to_dict())


def binary_violations(path: Path, spec: launch.LaunchSpec) -> list[str]:
    """The build's rules on a finished cubin, each reason prefixed by its kind ("cubin: ",
    "sass: "); [] when it passes. The rules on the PTX are not among them: a cubin edited after
    the build (`cudal2 sass`) has none, so these are what can check it again."""
    try:
        bad = cubin.violations(cubin.inspect(Path(path).read_bytes()), [k.name for k in spec.kernels])
    except cubin.CubinError as e:
        bad = [f"unreadable cubin: {e}"]
    if bad:
        return ["cubin: " + "; ".join(bad)]
    return ["sass: " + "; ".join(bad)] if (bad := constbank.violations(Path(path))) else []


def _unsandboxed(why: str, log: str) -> BuildResult:
    """The sandbox failed to start after the probe passed (unshare refused: the machine's namespace
    limit reached; a mount failed): the machine's fault, not the source's, so it is not cached
    (returned with rc None, as a timeout is); it was the source's cached verdict (review 51). It is
    `infra` too: the results db stored it, and the reward service rewarded it (review 52)."""
    return BuildResult(False, "", "build", reason=f"sandbox: {why}", log=_trim(log), infra=True)


def _failed(rc: int | None, log: str, cfg: BuildConfig) -> BuildResult:
    if rc is None:
        return BuildResult(False, "", "build", reason=f"build timed out after {cfg.timeout_s:.0f} s", log=_trim(log))
    return BuildResult(False, "", "build", reason=_first_error(log), log=_trim(log))


def build_many(sources: Iterable[str], cfg: BuildConfig,
               on_done: Callable[[int, BuildResult], None] | None = None) -> list[BuildResult]:
    """Build in parallel, one job per core unless `cfg.jobs` says otherwise; results in input order."""
    sources = list(sources)
    jobs = cfg.jobs or os.cpu_count() or 1
    results: list[BuildResult | None] = [None] * len(sources)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(build, s, cfg): i for i, s in enumerate(sources)}
        for fut in as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            if on_done:
                on_done(i, results[i])
    return results  # type: ignore[return-value]


def build_all(sources: Iterable[str], cfg: BuildConfig, console, label: str = "building") -> list[BuildResult]:
    """`build_many` behind a rich progress bar on `console` (a long wait: CUTLASS builds take ~50 s each)."""
    from rich.progress import Progress
    sources = list(sources)
    with Progress(console=console) as bar:
        task = bar.add_task(label, total=len(sources))
        return build_many(sources, cfg, on_done=lambda i, r: bar.advance(task))
