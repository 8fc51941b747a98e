"""Array-library glue for the kernel library: torch or cupy, whichever the caller passed.

Guarantees: `check` refuses, with a one-line `InputError`, what the library does not compute:
arrays off the GPU, a dtype other than fp16, other than two dimensions, non-contiguous memory,
operands on different devices; pointers, the current stream, output and workspace allocation all
come from the caller's own framework (its caching allocator, its current stream), so a library
call is stream-ordered with the caller's work and capturable in the caller's CUDA graph; `vendor`
is that framework's cuBLAS-backed A @ B.T, used for valid inputs no kernel serves (and for
pointers not 256-byte aligned, which the kernel contract needs).

Does not: copy, cast or make inputs contiguous.
"""

from __future__ import annotations


class InputError(ValueError):
    """An input the library does not compute; the message is one line saying what to change."""


def _problem(name: str, on_gpu: bool, dtype, fp16, ndim: int, contiguous: bool) -> str | None:
    if not on_gpu:
        return f"{name} is in host memory; cudal2 computes on CUDA arrays (move it to the GPU, e.g. .cuda())"
    if dtype != fp16:
        return f"{name} is {dtype}; cudal2 computes fp16 GEMMs (cast it, e.g. .half())"
    if ndim != 2:
        return f"{name} has {ndim} dimensions; cudal2.matmul takes 2 (cudal2.linear takes leading dimensions)"
    if not contiguous:
        return f"{name} is not contiguous; pass .contiguous() (cudal2 reads dense row-major rows)"
    return None


class _Torch:
    is_torch = True

    def __init__(self, torch):
        self.t = torch

    def check(self, A, B) -> None:
        for name, x in (("A", A), ("B", B)):
            why = _problem(name, x.is_cuda, x.dtype, self.t.float16, x.dim(), x.is_contiguous())
            if why:
                raise InputError(f"cudal2: {why}")
        if B.device != A.device:
            raise InputError(f"cudal2: A is on {A.device} and B on {B.device}; put them on one GPU")

    def ineligible(self, A, B) -> str | None:
        """Why our kernel may not read these operands (a fallback reason, as the dispatcher counts
        it), or None."""
        if A.is_neg() or B.is_neg():   # the memory holds the un-negated values: the vendor resolves the bit
            return "not_dense_fp16"
        return None if A.data_ptr() % 256 == 0 and B.data_ptr() % 256 == 0 else "unaligned"

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

    @staticmethod
    def device(A) -> int:
        return A.device.index


class _Cupy:
    is_torch = False

    def __init__(self, cupy):
        self.cp = cupy

    @staticmethod
    def plain(A, B) -> bool:
        """Both dense fp16 matrices: the common case, in one expression (every call's path)."""
        return (A.dtype.char == "e" and B.dtype.char == "e" and A.ndim == 2 and B.ndim == 2
                and A.flags.c_contiguous and B.flags.c_contiguous)

    def check(self, A, B) -> None:
        if self.plain(A, B) and A.device.id == B.device.id:
            return
        for name, x in (("A", A), ("B", B)):
            why = _problem(name, True, x.dtype, self.cp.float16, x.ndim, x.flags.c_contiguous)
            if why:
                raise InputError(f"cudal2: {why}")
        if A.device != B.device:
            raise InputError(f"cudal2: A is on {A.device} and B on {B.device}; put them on one GPU")

    def ineligible(self, A, B) -> str | None:
        return None if A.data.ptr % 256 == 0 and B.data.ptr % 256 == 0 else "unaligned"

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

    @staticmethod
    def device(A) -> int:
        return A.device.id


_OPS: dict[type, object] = {}   # per array type: one glue object, found once (this is the call path)


def ops_for(A, B):
    ops = _OPS.get(type(A))
    if ops is not None:
        return ops
    mod = type(A).__module__.split(".")[0]
    if mod == "torch":
        import torch
        ops = _Torch(torch)
    elif mod == "cupy":
        import cupy
        ops = _Cupy(cupy)
    else:
        raise TypeError(f"cudal2.matmul takes torch or cupy arrays, got {type(A).__name__}")
    _OPS[type(A)] = ops
    return ops
