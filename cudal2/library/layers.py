"""The library where models use it: `linear` (torch, any leading dimensions) and `patch`/`unpatch`,
which route a model's fp16 `torch.nn.Linear` layers through the library.

Guarantees:
- `linear(x, W, bias)` equals `torch.nn.functional.linear(x, W, bias)` for fp16 CUDA tensors: x of
  shape (..., K) (its rows are made dense when they are not), W of (N, K), bias of (N,) or None;
  the call is one `torch.ops.cudal2.linear` (the compiled dispatcher, `cudal2 library build`) or,
  without it, `torch.ops.cudal2.hgemm` (Python dispatch): `torch.compile` traces either and CUDA
  graphs capture either; wrong inputs raise the library's one-line `InputError`;
- `patch(model)` returns how many layers it routed: every `nn.Linear` whose weight is fp16 and
  whose (out, in) features the library serves at some M (on a machine without a library, every
  fp16 layer: they keep their own forward for host inputs anyway); the others stay untouched, so
  patching never adds a cost where no library kernel can run. A
  patched layer sends fp16 CUDA inputs through `linear` when no gradient is wanted (inference:
  `torch.no_grad()` or `torch.inference_mode()`), and anything else (a CPU input, another dtype,
  training) to its own forward, unchanged; `unpatch(model)` restores every layer and returns how many.

Does not: change weights, cast, or move anything between devices.
"""

from __future__ import annotations

from cudal2.library.arrays import InputError

_MARK = "_cudal2_patched"


def _validate(x, W, bias) -> None:
    """Raise the one-line error for inputs `linear` does not compute."""
    import torch
    if not isinstance(x, torch.Tensor) or not isinstance(W, torch.Tensor):
        raise TypeError(f"cudal2.linear takes torch tensors, got {type(x).__name__} and {type(W).__name__}")
    if W.dim() != 2 or x.dim() < 1 or x.shape[-1] != W.shape[1]:
        raise InputError(f"cudal2.linear: x is {tuple(x.shape)} and W {tuple(W.shape)}; want x (..., K) and W (N, K)")
    if bias is not None and tuple(bias.shape) != (W.shape[0],):
        raise InputError(f"cudal2.linear: bias is {tuple(bias.shape)}; want ({W.shape[0]},)")
    for name, t in (("x", x), ("W", W)):
        if not t.is_cuda:
            raise InputError(f"cudal2: {name} is in host memory; cudal2 computes on CUDA arrays (move it to the GPU)")
        if t.dtype != torch.float16:
            raise InputError(f"cudal2: {name} is {t.dtype}; cudal2 computes fp16 GEMMs (cast it, e.g. .half())")


def linear(x, W, bias=None):
    """F.linear(x, W, bias) through the default library. The common case (fp16 CUDA tensors, the
    compiled dispatcher in use) is a few attribute reads and a set lookup, then one C++ call (a
    served shape) or F.linear itself (any other: the vendor at no extra dispatch)."""
    s = _SHORT[0]
    if s is not None and x.dtype is s.fp16 and W.dtype is s.fp16 and x.is_cuda and not s.compiling():
        K = W.shape[1]
        key = (x.numel() // K, W.shape[0], K)
        if bias is None and x.shape[-1] == K and key in s.keys:
            return s.call(x, W, None)
        if bias is not None or (key not in s.pending and (W.shape[0], K) not in s.ranged):
            why = "no_entry" if bias is None else "bias"
            s.fallbacks[why] = s.fallbacks.get(why, 0) + 1
            return s.vendor(x, W, bias)
    from cudal2 import library
    _validate(x, W, bias)
    if not x.is_contiguous():
        x = x.contiguous()
    lib = library._default or library.default()
    y = lib.linear(x, W, bias)
    if lib._ext is not None and lib is library._default and (s is None or s.lib is not lib):
        _SHORT[0] = _Short(lib)   # from now on, the default library's calls take the short way
    return y


class _Short:
    """What `linear`'s short way reads: the shapes registered in the compiled dispatcher and those
    served but not yet registered (live views: the long way registers them on their first call),
    the (N, K) of M-range entries (the long way too), the dispatcher's `linear`, F.linear, and the
    library's fallback counts."""

    def __init__(self, lib):
        import torch
        self.lib, self.keys, self.pending, self.ranged = lib, lib._registered, lib._pending, lib._ranged
        self.fallbacks = lib._fallbacks
        self.call, self.vendor = lib._ext.linear, torch.nn.functional.linear
        self.compiling, self.fp16 = torch.compiler.is_compiling, torch.float16


_SHORT: list = [None]


def python_linear(lib, x, W, bias=None):
    """`linear` without the compiled dispatcher: rows through `torch.ops.cudal2.hgemm` (a Python
    custom op over `lib.matmul`'s Python dispatch), then the bias."""
    import torch

    import cudal2.library.torch_op  # noqa: F401  (registers torch.ops.cudal2.hgemm)
    K, N = W.shape[1], W.shape[0]
    rows = x.reshape(-1, K)
    y = x.new_empty((0, N)) if rows.shape[0] == 0 else torch.ops.cudal2.hgemm(rows, W)
    if bias is not None:
        y = y + bias
    return y.reshape(*x.shape[:-1], N)


def _forward(self, x):
    import torch
    if (isinstance(x, torch.Tensor) and x.is_cuda and x.dtype is torch.float16 and self.weight.is_cuda
            and not (torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad))):
        return linear(x, self.weight, self.bias)
    return type(self).forward(self, x)


def _served_nk():
    """(N, K) of the default library's served entries; None when no library loads here (no GPU)."""
    from cudal2 import library
    try:
        lib = library._default or library.default()
    except library.LibraryError:
        return None
    return {(e.N, e.K) for e in lib.served}


def patch(model) -> int:
    import torch
    nk = _served_nk()
    n = 0
    for m in model.modules():
        if (isinstance(m, torch.nn.Linear) and m.weight.dtype == torch.float16 and _MARK not in m.__dict__
                and (nk is None or tuple(m.weight.shape) in nk)):   # a layer nothing serves costs nothing
            m.forward = _forward.__get__(m)
            setattr(m, _MARK, True)
            n += 1
    return n


def unpatch(model) -> int:
    n = 0
    for m in model.modules():
        if _MARK in m.__dict__:
            del m.forward
            delattr(m, _MARK)
            n += 1
    return n
