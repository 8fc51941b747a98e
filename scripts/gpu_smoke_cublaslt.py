#!/usr/bin/env python3
"""GPU smoke test of cudal2.harness.cublaslt.LtGemm (needs a CUDA GPU, CuPy and nvmath-python).

For each shape (M, N, K): random fp16 A (M×K) and B (N×K), the heuristic asked for 100
algorithms, then algorithm 0 and the last one run eagerly, and algorithm 0 captured into a CUDA
graph (global capture mode) and launched. Each output is compared with the fp32 product
A·Bᵀ by relative Frobenius error (< 1e-2). C is filled with NaN before every run, so an output
that was never written fails. It also checks that capturing did not run the matmul.

Every CUDA step is followed by a synchronize, which raises on an asynchronous error; cuBLASLt
status errors raise from LtGemm. Exit status: 0 when every check passed, 1 otherwise, 2 when
cuBLASLt is unavailable.

    python scripts/gpu_smoke_cublaslt.py [--all] [--workspace-mib 32]

--all also runs and checks every algorithm the heuristic kept, not just the first and last.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cupy  # noqa: E402

from cudal2.harness.cublaslt import LtGemm, available  # noqa: E402

SHAPES = [(4096, 4096, 4096), (128, 4096, 4096), (64, 64, 64), (4096, 128, 256)]
TOL = 1e-2


def rel_fro(c, ref) -> float:
    c32 = c.astype(cupy.float32)
    if not bool(cupy.isfinite(c32).all()):
        return float("inf")
    return float(cupy.linalg.norm(c32 - ref) / cupy.linalg.norm(ref))


def sync(stream) -> None:
    stream.synchronize()
    cupy.cuda.runtime.deviceSynchronize()


def run_shape(M: int, N: int, K: int, ws, ws_bytes: int, all_algos: bool) -> list[str]:
    fails: list[str] = []
    tag = f"{M}x{N}x{K}"
    cupy.random.seed(M * 7 + N * 13 + K)
    a = cupy.random.standard_normal((M, K), dtype=cupy.float32).astype(cupy.float16)
    b = cupy.random.standard_normal((N, K), dtype=cupy.float32).astype(cupy.float16)
    c = cupy.empty((M, N), dtype=cupy.float16)
    ref = a.astype(cupy.float32) @ b.astype(cupy.float32).T
    cupy.cuda.runtime.deviceSynchronize()
    for x in (a, b, c):
        assert x.flags.c_contiguous and x.data.ptr % 256 == 0, "cupy gave an unaligned buffer"

    stream = cupy.cuda.Stream(non_blocking=True)
    g = LtGemm(M, N, K, ws.data.ptr if ws is not None else 0, ws_bytes)
    try:
        n = g.algorithms(100)
        print(f"[{tag}] heuristic returned {g.heuristic_returned}, kept {n} "
              f"(skipped {g.heuristic_skipped}); workspace sizes {sorted(set(g.workspace_sizes))}")
        if n == 0:
            return [f"{tag}: heuristic kept no algorithm"]
        print(f"[{tag}] algo 0: {g.describe(0)}")
        if n > 1:
            print(f"[{tag}] algo {n - 1}: {g.describe(n - 1)}")

        def check(label: str) -> None:
            err = rel_fro(c, ref)
            ok = err < TOL
            print(f"[{tag}] {label}: rel_fro={err:.3e} {'ok' if ok else 'FAIL'}")
            if not ok:
                fails.append(f"{tag} {label}: rel_fro={err:.3e}")

        algos = list(range(n)) if all_algos else sorted({0, n - 1})
        for i in algos:
            c.fill(cupy.nan)
            sync(cupy.cuda.get_current_stream())
            g(a.data.ptr, b.data.ptr, c.data.ptr, stream.ptr, algo=i)
            sync(stream)
            check(f"eager algo {i}")

        # Graph capture of algorithm 0 on a non-blocking stream, global mode (strictest).
        c.fill(cupy.nan)
        sync(cupy.cuda.get_current_stream())
        stream.begin_capture(mode=cupy.cuda.runtime.streamCaptureModeGlobal)
        try:
            g(a.data.ptr, b.data.ptr, c.data.ptr, stream.ptr, algo=0)
        finally:
            graph = stream.end_capture()   # always end, so the stream is usable afterwards
        sync(stream)
        if bool(cupy.isfinite(c).any()):
            fails.append(f"{tag}: capture ran the matmul instead of recording it")
            print(f"[{tag}] capture: C written during capture FAIL")
        graph.launch(stream=stream)
        sync(stream)
        check("graph algo 0")
        c.fill(cupy.nan)
        sync(cupy.cuda.get_current_stream())
        graph.launch(stream=stream)
        graph.launch(stream=stream)
        sync(stream)
        check("graph algo 0, relaunched twice")
    finally:
        g.close()
    return fails


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="check every kept algorithm")
    ap.add_argument("--workspace-mib", type=int, default=32)
    args = ap.parse_args()

    why = available()
    if why is not None:
        print(f"cuBLASLt unavailable: {why}")
        return 2
    from nvmath.bindings import cublasLt
    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    print(f"device {dev.id}: {props['name'].decode()}, cuBLASLt {cublasLt.get_version()}")

    ws_bytes = args.workspace_mib << 20
    ws = cupy.empty(ws_bytes, dtype=cupy.uint8) if ws_bytes else None
    failures: list[str] = []
    for M, N, K in SHAPES:
        try:
            failures += run_shape(M, N, K, ws, ws_bytes, args.all)
        except Exception:
            traceback.print_exc()
            failures.append(f"{M}x{N}x{K}: exception")
    try:
        cupy.cuda.runtime.deviceSynchronize()
    except Exception:
        traceback.print_exc()
        failures.append("final deviceSynchronize")

    if failures:
        print(f"FAILED ({len(failures)}):")
        for f in failures:
            print("  " + f)
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
