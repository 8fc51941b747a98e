"""Load a built artifact as something to call: `load_artifact` is the one entry point the judge's
worker, the library and the profiler use, so what the judge verified is what runs elsewhere.

Guarantees: a cubin (contract v2) is loaded by `module.Module` from its launch spec (read from
the build folder's build.json when not given); a v1 shared library is opened with RTLD_LOCAL (two
candidates never see each other's symbols), a missing `cudal2_gemm` raises `LoadError` naming
the file, and the optional `cudal2_workspace_bytes` reads as 0 when absent. Both expose
`workspace_bytes(M, N, K)` and `call(a, b, c, M, N, K, ws, ws_bytes, stream) -> status`.

Does not: isolate anything. Loading a v1 library runs its static initializers and calling it runs
arbitrary host code, so v1 is only ever loaded from trusted sources, inside a killable worker
process of its own.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass


class LoadError(RuntimeError):
    """The library cannot be opened or lacks the contract's entry point."""


@dataclass
class Candidate:
    path: str
    _gemm: ctypes._CFuncPtr
    _ws: ctypes._CFuncPtr | None

    def workspace_bytes(self, M: int, N: int, K: int) -> int:
        return int(self._ws(M, N, K)) if self._ws is not None else 0

    def call(self, a: int, b: int, c: int, M: int, N: int, K: int,
             workspace: int, workspace_bytes: int, stream: int) -> int:
        """Enqueue one GEMM on `stream`; returns the candidate's status code."""
        return int(self._gemm(a, b, c, M, N, K, workspace, workspace_bytes, stream))


def load_artifact(path: str, kind: str | None = None, spec: dict | None = None):
    """The callable for a built binary: a v2 `module.Module` for a cubin, else a v1 `Candidate`."""
    if (kind or ("cubin" if path.endswith(".cubin") else "shared_object")) == "cubin":
        import json
        from pathlib import Path

        from cudal2.harness.launch import SpecError
        from cudal2.harness.module import LoadError as ModuleError, load
        try:
            if spec is None:
                spec = json.loads((Path(path).parent / "build.json").read_text())["spec"]
            task = spec.get("task") if isinstance(spec, dict) else spec.task
            if task is not None:
                # every caller here makes the GEMM's call (A, B, C, M, N, K), which binds none of a
                # general task's buffers (review 36: such a spec raised inside the judge, a "harness
                # error" that the reward reads as an infrastructure fault)
                raise ValueError(f"its launch spec is for the general task {task!r}, not the GEMM")
            return load(path, spec)
        except (ModuleError, SpecError, OSError, KeyError, ValueError) as e:
            raise LoadError(f"cannot load {path}: {e}") from None
    return load_candidate(path)


def load_candidate(path: str) -> Candidate:
    try:
        lib = ctypes.CDLL(os.path.abspath(path), mode=os.RTLD_LOCAL | os.RTLD_NOW)
    except OSError as e:
        raise LoadError(f"cannot load {path}: {e}") from None
    try:
        gemm = lib.cudal2_gemm
    except AttributeError:
        raise LoadError(f"{path} does not export cudal2_gemm") from None
    p = ctypes.c_void_p
    gemm.argtypes = [p, p, p, ctypes.c_int, ctypes.c_int, ctypes.c_int, p, ctypes.c_size_t, p]
    gemm.restype = ctypes.c_int
    ws = getattr(lib, "cudal2_workspace_bytes", None)
    if ws is not None:
        ws.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        ws.restype = ctypes.c_size_t
    return Candidate(path, gemm, ws)
