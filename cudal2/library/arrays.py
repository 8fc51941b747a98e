"""Array-library glue for the kernel library: torch or cupy, whichever the caller passed.

Guarantees: pointers, the current stream, output and workspace allocation all come from the
caller's own framework (its caching allocator, its current stream), so a library call is
stream-ordered with the caller's work and capturable in the caller's CUDA graph; `vendor` is that
framework's cuBLAS-backed A @ B.T.

Does not: copy, cast or make inputs contiguous: ineligible inputs go to the vendor path.
"""

from __future__ import annotations


class _Torch:
    def __init__(self, torch):
        self.t = torch

    def shape(self, x):
        return tuple(x.shape)

    def eligible(self, A, B) -> bool:
        t = self.t
        return (A.dim() == 2 and B.dim() == 2 and A.dtype == t.float16 and B.dtype == t.float16 and A.is_cuda
                and B.device == A.device and A.is_contiguous() and B.is_contiguous()
                and A.data_ptr() % 256 == 0 and B.data_ptr() % 256 == 0)

    def vendor(self, A, B):
        return A @ B.T

    def empty(self, A, M, N):
        return self.t.empty((M, N), dtype=A.dtype, device=A.device)

    def workspace(self, A, nbytes):
        return self.t.empty(max(nbytes, 256), dtype=self.t.uint8, device=A.device)

    def ptr(self, x) -> int:
        return x.data_ptr()

    def stream(self, A) -> int:
        return self.t.cuda.current_stream(A.device).cuda_stream


class _Cupy:
    def __init__(self, cupy):
        self.cp = cupy

    def shape(self, x):
        return tuple(x.shape)

    def eligible(self, A, B) -> bool:
        cp = self.cp
        return (A.ndim == 2 and B.ndim == 2 and A.dtype == cp.float16 and B.dtype == cp.float16
                and A.flags.c_contiguous and B.flags.c_contiguous and A.data.ptr % 256 == 0 and B.data.ptr % 256 == 0)

    def vendor(self, A, B):
        return A @ B.T

    def empty(self, A, M, N):
        return self.cp.empty((M, N), dtype=A.dtype)

    def workspace(self, A, nbytes):
        return self.cp.empty(max(nbytes, 256), dtype=self.cp.uint8)

    def ptr(self, x) -> int:
        return x.data.ptr

    def stream(self, A) -> int:
        return self.cp.cuda.get_current_stream().ptr


def ops_for(A, B):
    mod = type(A).__module__.split(".")[0]
    if mod == "torch":
        import torch
        return _Torch(torch)
    if mod == "cupy":
        import cupy
        return _Cupy(cupy)
    raise TypeError(f"cudal2.matmul takes torch or cupy arrays, got {type(A).__name__}")
