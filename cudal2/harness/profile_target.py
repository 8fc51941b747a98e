"""The process Nsight Compute profiles: one candidate call at one shape, nothing else.

Usage: `python -m cudal2.harness.profile_target LIB.so|KERNEL.cubin M N K`, or `cublas` for LIB.so to profile
the vendor baseline (cublasGemmEx, TN, as the judge times it) on inputs of the same kind.

Guarantees: inputs are what the judge's timed calls get (guards' mode 0, `gauss2` pairs) under
seeds drawn from the OS's entropy: a kernel cannot tell the profiled call from a timed one by its
inputs (review 78: cupy's unbounded normal under a fixed seed could be told apart, and bad/zz71
padded the profiled call with tensor work on inputs only it had). Everything runs on one
non-default stream, two warm-up calls run before `cudaProfilerStart` and exactly one call runs
inside the start/stop window, so `ncu --profile-from-start off` sees the kernels of one call.
A non-zero status from the candidate, or a CUDA error at the synchronize, exits non-zero with a
one-line message on stderr. Prints nothing on success (ncu's CSV shares stdout).

Does not: check the output, time anything, or isolate the candidate (run it in its own process).
"""

from __future__ import annotations

import secrets
import sys

import cupy as cp

from cudal2.harness import guards
from cudal2.harness.loader import load_artifact
from cudal2.harness.profile import CUBLAS


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 4:
        sys.exit("usage: python -m cudal2.harness.profile_target LIB.so|cublas M N K")
    lib, (M, N, K) = args[0], (int(x) for x in args[1:])
    cand = None if lib == CUBLAS else load_artifact(lib)
    ws_bytes = cand.workspace_bytes(M, N, K) if cand else 0

    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        a, b = cp.empty((M, K), dtype=cp.float16), cp.empty((N, K), dtype=cp.float16)
        guards.fill(a, secrets.randbits(64), "normal")
        guards.fill(b, secrets.randbits(64), "normal")
        c = cp.empty((M, N), dtype=cp.float16)
        ws = cp.empty(max(ws_bytes, 256), dtype=cp.uint8)
    stream.synchronize()

    if cand is None:
        from cudal2.harness.baselines import Cublas
        vendor = Cublas(stream)

    def call(what: str) -> None:
        if cand is None:
            vendor.tn(a, b, c)
            return
        rc = cand.call(a.data.ptr, b.data.ptr, c.data.ptr, M, N, K,
                       ws.data.ptr, ws_bytes, stream.ptr)
        if rc != 0:
            sys.exit(f"profile_target: cudal2_gemm returned {rc} on the {what} call "
                     f"({lib}, {M}x{N}x{K})")

    try:
        call("first warm-up")
        call("second warm-up")
        stream.synchronize()
        cp.cuda.profiler.start()
        call("profiled")
        stream.synchronize()
        cp.cuda.profiler.stop()
    except cp.cuda.runtime.CUDARuntimeError as e:
        sys.exit(f"profile_target: CUDA error ({lib}, {M}x{N}x{K}): {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
