"""The kernel library at run time: look up a shape, build on first use, call on the caller's stream.

Guarantees:
- never lose: only entries whose measured speedup over the vendor is at least 1 + `serve_margin`
  in every timing mode (on the median of the benches an entry keeps), and at least 1 in every one
  of them, are served (`Entry.wins`); elsewhere the vendor GEMM runs;
- dispatch: the best-scoring served entry for the exact shape (a replaced entry on standby,
  `manifest.STANDBY`, serves only while its replacement does not), else one whose M-range covers
  it, else the vendor GEMM (cuBLAS through torch or cupy); the result is always C = A·Bᵀ; `stats()` counts
  hits per entry and fallbacks per reason;
- every entry ships its cubin (contract v2; the manifest refuses anything else): it is loaded
  from the library folder, hash-checked, by the worker's own module loader, with no compiler and
  no build on the call path (rebuilding is `cudal2 library build`);
- the call enqueues on the caller's current stream (torch's or cupy's) with no host
  synchronization; the workspace comes from the caller's framework allocator;
- with torch and the compiled dispatcher built (`cudal2 library build`), torch calls run in C++
  (`torch.ops.cudal2.linear`): a served v2 entry is loaded (hash-checked) and registered there on
  the first call at its shape (an M-range entry per M), the dispatcher asking `_load_for`; it
  counts hits and fallbacks, merged into `stats()`. cupy calls use its lookup and launch too
  (`launch_ptrs`, into a C cupy allocates), for entries that need no workspace. Without it (not
  built, or no torch), the same dispatch runs in Python;
- a kernel that fails (non-zero status, a build or hash failure) is disabled for the process with
  a warning, and the call falls back to the vendor GEMM; an M-range entry whose launch spec does
  not resolve at one M (a grid, workspace or shared-memory size out of range there) declines that
  shape only (the next entry or the vendor serves it) and keeps serving the rest of its range;
- one device per process is served: a module loads into the context current at its first call
  (the current device's), and a call on any other device goes to the vendor (`other_device`), in
  the compiled dispatcher as in Python (a launch there failed, and disabled the entry for every
  device; a model split over GPUs in one process, device_map="auto", made such calls).

Does not: re-verify kernels at load (that is `cudal2 library verify`), or run them in a separate
process: library entries are winners the harness already judged.
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudal2.library import arrays, manifest
from cudal2.library.manifest import Entry, LibraryError

if TYPE_CHECKING:
    import pandas as pd


class Library:
    def __init__(self, folder: Path, serve_margin: float | None = 0.02):
        self.folder = Path(folder)
        self.entries = manifest.read(self.folder)
        # Never lose: only entries measured faster than the vendor (by the margin, in every mode) are
        # served (serve_margin None: every entry, for the bench that measures them). Dispatch runs on
        # every call: index them by (N, K), the part of a shape that must match.
        self.served = [e for e in self.entries if serve_margin is None or e.wins(serve_margin)]
        self._by_nk: dict[tuple[int, int], list[Entry]] = {}
        for e in self.served:
            self._by_nk.setdefault((e.N, e.K), []).append(e)
        self._hits: dict[str, int] = {}
        self._fallbacks: dict[str, int] = {}
        self._short_vendor = [0]   # calls layers.linear sent straight to F.linear (counted as no_entry)
        self._loaded: dict[str, Any] = {}
        self._disabled: dict[str, str] = {}
        self._declined: set[tuple[str, int, int, int]] = set()   # (M-range entry, shape) it cannot launch
        self._lock = threading.Lock()
        self._ext: Any = None            # the compiled dispatcher, once this library is registered in it
        self._no_ext = False             # compiled() found no dispatcher (not built, no torch or no GPU)
        self._ranged = {(e.N, e.K) for e in self.served if e.m_range is not None}

    # --- what is in it -----------------------------------------------------------------------
    @property
    def table(self) -> "pd.DataFrame":
        import pandas as pd  # only here: `import cudal2` and dispatch stay free of pandas
        rows = []
        for e in self.entries:
            m = e.measured
            rows.append({"id": e.id, "M": e.M, "m_range": e.m_range, "N": e.N, "K": e.K, "family": e.family,
                         "provenance": e.provenance.get("kind"), "score": e.score,
                         **{f"{mode}_speedup_{b}": v for mode, sp in m.get("speedup", {}).items() for b, v in sp.items()},
                         "gpu": e.gpu.get("name"), "date": e.date})
        return pd.DataFrame(rows)

    def lookup(self, M: int, N: int, K: int) -> Entry | None:
        """The best-scoring enabled entry for the exact shape, else the best whose M-range covers M."""
        nk = self._by_nk.get((N, K))
        if nk is None:   # most shapes a caller sends have no entry: answer them first
            return None
        cands = [e for e in nk if e.covers(M, N, K) and e.id not in self._disabled
                 and not (self._declined and (e.id, M, N, K) in self._declined)]
        return max(cands, key=lambda e: (e.m_range is None, e.score), default=None)

    def disabled(self) -> dict[str, str]:
        return dict(self._disabled)

    def stats(self) -> dict[str, dict[str, int]]:
        """Calls so far: per served entry, and per reason the vendor ran instead (no_entry: no entry
        wins at the shape; unaligned: an operand not 256-byte aligned; failed: the entry failed;
        other_device: the operands are on another device than the entry's module; not_dense_fp16:
        a negative-bit view, or (compiled dispatcher) an operand that is not a dense fp16 matrix;
        bias, autograd: calls the compiled dispatcher left to F.linear)."""
        hits, falls = dict(self._hits), dict(self._fallbacks)
        if self._short_vendor[0]:
            falls["no_entry"] = falls.get("no_entry", 0) + self._short_vendor[0]
        if self._ext is not None:
            c_hits, c_falls, c_disabled = self._ext.stats()
            for src, dst in ((c_hits, hits), (c_falls, falls)):
                for k, v in src.items():
                    dst[k] = dst.get(k, 0) + v
            for k, why in c_disabled.items():
                self._disabled.setdefault(k, f"compiled dispatcher: {why}")
        return {"hits": hits, "fallbacks": falls}

    # --- the compiled dispatcher -------------------------------------------------------------
    def compiled(self):
        """Make this library the one the process's compiled dispatcher serves (clearing what another
        library registered there, and the counts `stats` reads there; entries register on the first
        call at their shape) and return the dispatcher; None when it is not built or torch has no
        GPU (remembered for this library: build it before making the Library)."""
        if self._ext is not None and _Active.library is self:
            return self._ext
        if self._no_ext:
            return None
        from cudal2.library import dispatch
        try:
            import torch
            ext = dispatch.load() if torch.cuda.is_available() else None
        except ImportError:
            ext = None
        if ext is None:
            # Asked on every call of the Python path (a cupy call, or torch without the build):
            # remembered, so that path does not pay an import attempt each time.
            self._no_ext = True
            return None
        from cudal2.library import layers
        from cudal2.library.arrays import InputError
        layers.forget_front()   # cudal2.linear's short way served the library this one replaces
        ext.clear()             # (and closes its door)
        ext.reset_stats()       # stats() counts this library's calls from now on
        # Served shapes load on their first call (the dispatcher asks `_load_for`), so a first call
        # pays for one binary, not for all of them.
        ext.set_pending([(e.M, e.N, e.K) for e in self.served if e.m_range is None], sorted(self._ranged),
                        self._load_for, InputError)
        _Active.library = self
        self._ext = ext
        return ext

    def _load_for(self, M: int, N: int, K: int) -> bool:
        """The dispatcher's loader: register the served entry for (M, N, K); whether one is now in."""
        from cudal2.library import dispatch
        while (e := self.lookup(M, N, K)) is not None:
            cand = self._launchable(e, M, N, K)
            if cand is None:
                continue   # disabled, or declined at this shape: the next entry, if any
            try:
                dispatch.register(self._ext, e.id, cand, M, N, K)
                return True
            except Exception as err:  # noqa: BLE001  a broken entry costs itself, never the caller
                self._disable(e, str(err))
        return False

    def _launchable(self, e: Entry, M: int, N: int, K: int):
        """The entry's loaded module if its spec resolves at (M, N, K); else None, having disabled a
        broken entry or declined this shape of an M-range entry (recorded: `lookup` skips it)."""
        from cudal2.harness.launch import SpecError
        from cudal2.harness.module import LoadError
        try:
            cand = self._candidate(e)
        except Exception as err:  # noqa: BLE001  a broken entry costs itself, never the caller
            self._disable(e, str(err))
            return None
        try:
            cand.resolved(M, N, K)   # the workspace too; cached once it resolves (this is a call's path)
        except (SpecError, LoadError) as err:
            if e.m_range is None:   # its one shape: the entry cannot run at all
                self._disable(e, str(err))
            else:
                self._declined.add((e.id, M, N, K))
            return None
        return cand

    def linear(self, x, W, bias=None):
        """F.linear(x, W, bias) for fp16 CUDA torch tensors through this library (x of any leading
        dimensions); the compiled dispatcher when built, else the Python path."""
        y = self._dispatch(x, W, bias)
        if y is None:
            from cudal2.library.layers import python_linear
            return python_linear(self, x, W, bias)
        return y

    def _dispatch(self, x, W, bias):
        """The call through the compiled dispatcher (the op while torch.compile traces, else its
        builtin); None when there is no dispatcher."""
        ext = self._ext if _Active.library is self else self.compiled()
        if ext is None:
            return None
        return _op()(x, W, bias) if _compiling() else ext.linear(x, W, bias)

    def _fallback(self, why: str, ops, A, B):
        self._fallbacks[why] = self._fallbacks.get(why, 0) + 1
        return ops.vendor(A, B)

    # --- building and loading ----------------------------------------------------------------
    def _candidate(self, e: Entry):
        with self._lock:
            if e.id in self._loaded:
                return self._loaded[e.id]
            # The bytes the manifest pins, loaded as the worker loads them: what the judge verified.
            from cudal2.harness.launch import LaunchSpec
            from cudal2.harness.module import Module
            data = (self.folder / e.binary).read_bytes()
            if manifest.sha256_bytes(data) != e.device_sha256:
                raise LibraryError(f"{e.id}: {e.binary} does not match the manifest's device hash")
            cand = Module(data, LaunchSpec.from_dict(e.spec))
            self._loaded[e.id] = cand
            return cand

    def _disable(self, e: Entry, why: str) -> None:
        self._disabled[e.id] = why
        warnings.warn(f"cudal2: kernel {e.id} disabled for this process ({why}); using the vendor GEMM", stacklevel=3)

    # --- calling -----------------------------------------------------------------------------
    def matmul(self, A, B):
        """C = A @ B.T for fp16 A (M×K) and B (N×K), torch or cupy, on the current stream."""
        ops = arrays.ops_for(A, B)
        if not ops.is_torch:
            return self._matmul_cupy(ops, A, B)
        ops.check(A, B)
        if A.shape[1] == B.shape[1]:
            C = self._dispatch(A, B, None)
            if C is not None:
                return C
        M, K = _operands(A, B)
        return self._python_call(ops, A, B, M, B.shape[0], K)

    def _matmul_cupy(self, ops, A, B):
        # Every cupy call pays this gate on top of cupy's own matmul, so the common cases come
        # first and cheaply: valid operands of a shape no entry serves go straight to cupy.
        if not ops.plain(A, B):
            ops.check(A, B)   # says what is wrong, in one line
        M, K = _operands(A, B)
        N = B.shape[0]
        if (N, K) not in self._by_nk:
            return self._fallback("no_entry", ops, A, B)
        if A.device.id != B.device.id:
            ops.check(A, B)   # says so, in one line
        if self.lookup(M, N, K) is None:
            return self._fallback("no_entry", ops, A, B)
        # The compiled dispatcher's lookup and launch, when it is built (it needs torch), into a C
        # cupy allocates.
        ext = self._ext if _Active.library is self else self.compiled()
        if ext is not None:
            C = ops.empty(A, M, N)
            rc = ext.launch_ptrs(M, N, K, ops.ptr(A), ops.ptr(B), ops.ptr(C), ops.stream(A), ops.device(A))
            if rc == 0:
                return C
            if rc == 2:
                return self._fallback("failed", ops, A, B)
            # 1: unaligned, a workspace, another device, or an entry that would not load: the Python
            # path says which
        return self._python_call(ops, A, B, M, N, K)

    def _python_call(self, ops, A, B, M: int, N: int, K: int):
        """The dispatch in Python: the entry's module launched through ctypes, else the vendor."""
        if why := ops.ineligible(A, B):
            return self._fallback(why, ops, A, B)
        e = self.lookup(M, N, K)
        if e is None:
            return self._fallback("no_entry", ops, A, B)
        cand = self._launchable(e, M, N, K)
        if cand is None:
            return self._python_call(ops, A, B, M, N, K)   # the next entry, else the vendor
        if cand.device != ops.device(A):   # its functions launch only in the context it loaded into
            return self._fallback("other_device", ops, A, B)
        C = ops.empty(A, M, N)
        nbytes = cand.workspace_bytes(M, N, K)
        ws = ops.workspace(A, nbytes)
        rc = cand.call(ops.ptr(A), ops.ptr(B), ops.ptr(C), M, N, K, ops.ptr(ws), nbytes, ops.stream(A))
        if rc != 0:
            self._disable(e, f"the kernel call returned {rc}")
            return self._fallback("failed", ops, A, B)
        self._hits[e.id] = self._hits.get(e.id, 0) + 1
        return C


def _operands(A, B) -> tuple[int, int]:
    """(M, K) of A, once B's K is checked to match."""
    (M, K), (N, K2) = A.shape, B.shape
    if K2 != K:
        raise ValueError(f"cudal2.matmul: A is {M}x{K} but B is {N}x{K2}; want B as N x K (C = A @ B.T)")
    return M, K


class _Active:
    """The library whose entries the process's compiled dispatcher holds."""
    library: "Library | None" = None


_OP: Any = None


def _op():
    global _OP
    if _OP is None:
        import torch
        _OP = torch.ops.cudal2.linear.default
    return _OP


_IS_COMPILING: Any = None


def _compiling() -> bool:
    """Inside torch.compile's tracing: call the op (traceable), not the builtin (a graph break)."""
    global _IS_COMPILING
    if _IS_COMPILING is None:
        import torch
        _IS_COMPILING = torch.compiler.is_compiling
    return _IS_COMPILING()
