"""Vendor baselines for one shape: cuBLAS (TN and NN formulations) and cuBLASLt (heuristic top-1,
and autotuned over the heuristic's top-k), all as timing runners on the judge's stream.

Guarantees: every baseline computes the contract's C = A·Bᵀ with fp32 accumulation and fp16
output on the same input sets as the candidate; cuBLAS uses its default algorithm; the NN
formulation reads a pre-transposed copy of B (made outside timing), so "cublas" is the faster
layout cuBLAS could be given; the autotuned cuBLASLt algorithm is the fastest of up to k
heuristic algorithms, each timed in a CUDA graph, cached per shape for the worker's life.

Does not: verify the baselines against each other (the judge's reference is float64), or
include the transposition of B in any time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import cupy as cp
import numpy as np

from cudal2.harness import timing
from cudal2.harness.cublaslt import LtGemm

CUDA_R_16F, CUBLAS_COMPUTE_32F, CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_GEMM_DEFAULT = 2, 68, 0, 1, -1
WORKSPACE_BYTES = 64 << 20
_autotuned: dict[tuple[int, int, int], int] = {}


@dataclass
class Sets:
    """Rotating input sets for timing: per set A, B, (Bᵀ), the candidate's C, the baselines' C and
    the candidate's workspace (pointers), regions of `buffers.Arena`s."""
    A: list[cp.ndarray]
    B: list[cp.ndarray]
    Bt: list[cp.ndarray]
    C: list[cp.ndarray]
    Cb: list[cp.ndarray]
    W: list[int] = field(default_factory=list)
    arena: object = None                              # the candidate's A, B, C and workspaces
    names: list[str] = field(default_factory=list)   # per arena region: what it is ("A of input set 3")
    spare: object = None                              # the baselines' own buffers, in an arena apart

    def __len__(self) -> int:
        return len(self.A)


class Cublas:
    """cublasGemmEx on row-major operands, on one stream, with a fixed workspace (graph-safe).

    Called through nvmath's bindings: cupy's own cuBLAS wrapper refuses to run during capture."""

    def __init__(self, stream: cp.cuda.Stream):
        from nvmath.bindings import cublas
        self._cublas = cublas
        self.handle = cublas.create()
        cublas.set_stream(self.handle, stream.ptr)
        # Without a workspace of its own, cuBLAS may allocate one, which a graph capture forbids.
        self.workspace = cp.empty(WORKSPACE_BYTES, dtype=cp.uint8)
        cublas.set_workspace(self.handle, self.workspace.data.ptr, WORKSPACE_BYTES)
        self.one, self.zero = np.array(1.0, np.float32), np.array(0.0, np.float32)

    def tn(self, A: cp.ndarray, B: cp.ndarray, C: cp.ndarray) -> None:
        M, K = A.shape
        N = B.shape[0]
        # Column-major view: C^T (N x M) = B_col^T (B_col is K x N) · A_col (K x M).
        self._cublas.gemm_ex(self.handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, self.one.ctypes.data,
                            B.data.ptr, CUDA_R_16F, K, A.data.ptr, CUDA_R_16F, K, self.zero.ctypes.data,
                            C.data.ptr, CUDA_R_16F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)

    def nn(self, A: cp.ndarray, Bt: cp.ndarray, C: cp.ndarray) -> None:
        M, K = A.shape
        N = Bt.shape[1]
        # Bt is K x N row-major = N x K column-major, used as is.
        self._cublas.gemm_ex(self.handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, self.one.ctypes.data,
                            Bt.data.ptr, CUDA_R_16F, N, A.data.ptr, CUDA_R_16F, K, self.zero.ctypes.data,
                            C.data.ptr, CUDA_R_16F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)

    def close(self) -> None:
        self._cublas.destroy(self.handle)


def runners(names: list[str], sets: Sets, stream: cp.cuda.Stream, cublas: Cublas, lt: LtGemm | None,
            autotune_k: int, min_replay_ms: float, max_calls: int, timeout_s: float) -> dict[str, Callable[[int], None]]:
    """Timing runners for the requested baselines ("cublas" expands to cublas_tn and cublas_nn)."""
    out: dict[str, Callable[[int], None]] = {}
    if "cublas" in names:
        out["cublas_tn"] = lambda i: cublas.tn(sets.A[i], sets.B[i], sets.Cb[i])
        out["cublas_nn"] = lambda i: cublas.nn(sets.A[i], sets.Bt[i], sets.Cb[i])
    if lt is not None and ("cublaslt" in names or "cublaslt_autotune" in names):
        lt_run = lambda algo: (lambda i: lt(sets.A[i].data.ptr, sets.B[i].data.ptr, sets.Cb[i].data.ptr, stream.ptr, algo))
        if "cublaslt" in names:
            out["cublaslt"] = lt_run(0)
        if "cublaslt_autotune" in names:
            algo = autotune(lt, sets, stream, autotune_k, min_replay_ms, max_calls, timeout_s)
            out["cublaslt_autotune"] = lt_run(algo)
    return out


def autotuned(p) -> int | None:
    """The algorithm index autotune chose for shape `p` in this process, if it ran."""
    return _autotuned.get((p.M, p.N, p.K))


def autotune(lt: LtGemm, sets: Sets, stream: cp.cuda.Stream, k: int, min_replay_ms: float, max_calls: int,
             timeout_s: float) -> int:
    """Index of the fastest of the heuristic's top-k algorithms (offline mode, median of 3)."""
    key = (sets.A[0].shape[0], sets.B[0].shape[0], sets.A[0].shape[1])
    if key in _autotuned and _autotuned[key] < len(lt):
        return _autotuned[key]
    n = len(lt)
    if n <= 1:
        return 0
    candidates = {}
    for algo in range(min(n, k)):
        run = (lambda a: lambda i: lt(sets.A[i].data.ptr, sets.B[i].data.ptr, sets.Cb[i].data.ptr, stream.ptr, a))(algo)
        try:
            candidates[algo] = run
            run(0)
        except RuntimeError:
            candidates.pop(algo)  # an algorithm the heuristic offered but cannot run here
    graphs = timing.build_graphs(stream, candidates, len(sets), min_replay_ms, max_calls, timeout_s)
    times = timing.offline(stream, graphs, 3, timeout_s)
    best = min(times, key=lambda a: times[a].median_us)
    _autotuned[key] = best
    return best
