"""cudal2: LLM-written HGEMM kernels, judged against cuBLAS, served from a kernel library.

`cudal2.matmul(A, B)` (C = A @ B.T, torch or cupy), `cudal2.linear(x, W, bias)` and
`cudal2.patch(model)` / `cudal2.unpatch(model)` go through the process-wide default library
(`cudal2.library.load()`); importing cudal2 imports neither torch nor cupy.
"""

__version__ = "0.1.0"

from cudal2 import library  # noqa: E402  (light: the manifest reader and dispatch, no CUDA)
from cudal2.library.layers import patch, unpatch  # noqa: E402


def matmul(A, B):
    """C = A @ B.T through the default kernel library (see cudal2.library)."""
    from cudal2.library import matmul as _matmul
    return _matmul(A, B)


def __getattr__(name: str):
    # `linear` is resolved on first use: the compiled dispatcher's builtin door when it is built
    # (layers.public_linear), else the Python function; importing cudal2 still imports no torch.
    if name == "linear":
        from cudal2.library.layers import public_linear
        fn = globals()["linear"] = public_linear()
        return fn
    raise AttributeError(f"module 'cudal2' has no attribute {name!r}")


__all__ = ["library", "matmul", "linear", "patch", "unpatch"]
