"""Where nvdisasm and cuobjdump are, and running them.

Guarantees:
- `find(name)` looks on PATH first, then in the `nvidia-cuda-nvdisasm` / `nvidia-cuda-cuobjdump`
  pip packages (they install under `site-packages/nvidia/cu*/bin/`); it returns None when neither
  has the tool, and never downloads anything;
- `run(name, args)` runs the tool with a timeout and returns its stdout; a missing tool raises
  `ToolMissing`, a failing one `ToolFailed` with the tool's own message, and one past its timeout
  `ToolTimeout` (a `ToolFailed`: the rules that read a tool's output refuse what it could not list;
  review 40: `subprocess.TimeoutExpired` came out of the build and stopped the reward service);
  one printing more than MAX_OUTPUT_MB is killed and fails (`bounded_run`; review 47).

Does not: check the version. 13.2 is what `pyproject.toml` pins and what this package was
written against (`-lrm narrow`, `-bbcfg -poff`); `version(name)` says what was found.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil

from cudal2 import bounded_run


class ToolMissing(RuntimeError):
    """The tool is neither on PATH nor installed by pip."""


class ToolFailed(RuntimeError):
    """The tool ran and failed."""


# Words every ToolTimeout's message holds: the build does not cache a refusal that says them (the
# machine may just have been busy), as it does not cache its own timeouts.
TIMED_OUT = "timed out after"


class ToolTimeout(ToolFailed):
    """The tool ran past its timeout and was killed."""


@functools.cache
def find(name: str) -> str | None:
    hit = shutil.which(name)
    if hit:
        return hit
    try:
        import nvidia  # a namespace package: one entry per installed nvidia-* wheel location
    except ImportError:
        return None
    for root in list(getattr(nvidia, "__path__", [])):
        for path in sorted(glob.glob(os.path.join(root, "*", "bin", name)), reverse=True):  # cu13 before cu12
            if os.access(path, os.X_OK):
                return path
    return None


def require(name: str) -> str:
    path = find(name)
    if path is None:
        raise ToolMissing(f"{name} not found on PATH nor in the pip package "
                          f"(pip install nvidia-cuda-{name}==13.2.*)")
    return path


MAX_OUTPUT_MB = 64   # most a tool may print (nvdisasm's listing of MAX_WORDS words is a few MB)


def run(name: str, args: list[str], timeout: float = 60.0) -> str:
    r = bounded_run.run([require(name), *args], timeout=timeout, max_bytes=MAX_OUTPUT_MB << 20)
    if r.rc is None:
        raise ToolTimeout(f"{name} {' '.join(args)} {TIMED_OUT} {timeout:.0f} s")
    if r.over:   # nvdisasm prints a callee's name on every call: a long name called often (review 47)
        raise ToolFailed(f"{name} {' '.join(args)} printed more than {MAX_OUTPUT_MB} MiB (killed)")
    if r.rc != 0:   # a tool may echo bytes that are not UTF-8 (review 43)
        raise ToolFailed(f"{name} {' '.join(args)} failed ({r.rc}): {r.err.decode(errors='replace').strip()[:2000]}")
    return r.out.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")


@functools.cache
def version(name: str) -> str:
    out = run(name, ["--version"])
    lines = [ln for ln in out.splitlines() if "release" in ln]
    return lines[0].strip() if lines else out.strip().splitlines()[-1]
