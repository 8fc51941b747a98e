"""The kernel library Python code imports: `cudal2.library.load()`, `lib.matmul(A, B)`, `cudal2.matmul`.

The default library is the `kernels_out/<arch>/` folder beside the package (or `[library].root`),
for the architecture of the current GPU.
"""

from __future__ import annotations

import threading
from pathlib import Path

from cudal2.library.manifest import Entry, LibraryError
from cudal2.library.runtime import Library

__all__ = ["Entry", "Library", "LibraryError", "load", "folder", "matmul", "default", "default_root", "current_arch"]

_default: Library | None = None
_lock = threading.Lock()


def default_root() -> Path:
    from cudal2.resources import resource
    return resource("kernels_out")


def current_arch() -> str:
    """'sm90' for compute capability 9.0, read through NVML (no CUDA context); LibraryError without a GPU."""
    from cudal2.harness.device import gpu_present
    why = gpu_present()
    if why:
        raise LibraryError(f"cudal2: {why}; the kernel library needs an NVIDIA GPU (or pass arch= to load a folder)")
    import pynvml as nv
    nv.nvmlInit()
    major, minor = nv.nvmlDeviceGetCudaComputeCapability(nv.nvmlDeviceGetHandleByIndex(0))
    return f"sm{major}{minor}"


def folder(root: str | Path | None = None, arch: str | None = None) -> Path:
    """The library folder for `arch` (default: this GPU's) under `root` (default: `default_root()`)."""
    return (Path(root) if root else default_root()) / (arch or current_arch())


def load(root: str | Path | None = None, arch: str | None = None, serve_margin: float = 0.02) -> Library:
    return Library(folder(root, arch), serve_margin=serve_margin)


def default() -> Library:
    """The process-wide default library (this GPU's folder), loaded on first use."""
    global _default
    if _default is None:
        with _lock:
            if _default is None:
                _default = load()
    return _default


def matmul(A, B):
    """C = A @ B.T through the process-wide default library (exact shape, M-range, else cuBLAS)."""
    return (_default or default()).matmul(A, B)
