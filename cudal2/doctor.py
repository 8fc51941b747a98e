"""`cudal2 doctor`: what this machine has for cudal2, with versions, and the fix for each gap.

Guarantees: every probe is read-only and bounded in time; a missing piece is reported with the
command that fixes it, never raised.

Does not: create a CUDA context (the GPU is read through NVML only).
"""

from __future__ import annotations

import importlib.metadata as md
import shutil
import subprocess
from dataclasses import dataclass


@dataclass
class Check:
    name: str
    found: str | None     # version or description; None when missing
    fix: str = ""


def _version(cmd: list[str], pick: str) -> str | None:
    """The last output line of `cmd` containing `pick` (or its path), None when not on PATH."""
    exe = shutil.which(cmd[0])
    if not exe:
        return None
    try:
        text = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return f"{exe} (did not answer --version)"
    lines = [line.strip() for line in text.splitlines() if pick in line]
    return lines[-1] if lines else exe


def _pkg(name: str) -> str | None:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


def checks() -> list[Check]:
    from cudal2.harness.build import cutlass_include
    from cudal2.harness.device import gpu_present
    from cudal2.sass import tools

    out = [Check("nvcc", _version(["nvcc", "--version"], "release"),
                 "install the CUDA toolkit (12.4+; 13.x tested) and put nvcc on PATH")]
    why = gpu_present()
    if why is None:
        import pynvml as nv
        h = nv.nvmlDeviceGetHandleByIndex(0)
        out.append(Check("GPU", f"{nv.nvmlDeviceGetName(h)} (max SM clock {nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)} MHz, "
                                f"{nv.nvmlDeviceGetCount()} device(s))"))
        out.append(Check("driver", nv.nvmlSystemGetDriverVersion()))
    else:
        out.append(Check("GPU", None, f"{why}: evaluation and timing need an NVIDIA GPU (builds and tests run without)"))
    out.append(Check("cupy", _pkg("cupy-cuda13x") or _pkg("cupy-cuda12x") or _pkg("cupy"), "pip install cupy-cuda13x"))
    out.append(Check("nvmath-python (cuBLAS/cuBLASLt)", _pkg("nvmath-python"), "pip install nvmath-python"))
    out.append(Check("nvidia-ml-py", _pkg("nvidia-ml-py"), "pip install nvidia-ml-py"))
    inc = cutlass_include()
    out.append(Check("CUTLASS/CuTe headers", f"{_pkg('nvidia-cutlass')} at {inc}" if inc else None, "pip install nvidia-cutlass"))
    out.append(_sandbox_check())
    out.append(Check("ncu (Nsight Compute)", _version(["ncu", "--version"], "Version"),
                     "install Nsight Compute (needed only for --profile)"))
    for tool in ("nvdisasm", "cuobjdump"):   # on PATH or from their pip packages, as the build finds them
        exe = tools.find(tool)
        out.append(Check(tool, exe and _version([exe, "--version"], "release"),
                         f"pip install nvidia-cuda-{tool} (v2 builds' machine-code rules, SASS stage)"))
    return out


def _sandbox_check() -> Check:
    from cudal2.config import BuildConfig
    from cudal2.harness.build import sandbox_state

    state, why = sandbox_state(BuildConfig(sandbox="on"))
    return Check("compiler sandbox (user namespaces)", "works" if state == "sandboxed" else None,
                 f"{why}: allow unprivileged user namespaces (or builds run unsandboxed with a warning; build.sandbox)")
