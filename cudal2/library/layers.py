"""The library where models use it: `linear` (torch, any leading dimensions) and `patch`/`unpatch`,
which route a model's fp16 `torch.nn.Linear` layers through the library.

Guarantees:
- `linear(x, W, bias)` equals `torch.nn.functional.linear(x, W, bias)` for fp16 CUDA tensors: x of
  shape (..., K) (its rows are made dense when they are not), W of (N, K), bias of (N,) or None;
  the GEMM goes through `torch.ops.cudal2.hgemm`, so `torch.compile` traces it and CUDA graphs
  capture it; wrong inputs raise the library's one-line `InputError`;
- `patch(model)` returns how many layers it routed: every `nn.Linear` whose weight is fp16. A
  patched layer sends fp16 CUDA inputs through `linear` and anything else (a CPU input, another
  dtype) to its own forward, unchanged; `unpatch(model)` restores every layer and returns how many.

Does not: change weights, cast, or move anything between devices.
"""

from __future__ import annotations

from cudal2.library.arrays import InputError

_MARK = "_cudal2_patched"


def linear(x, W, bias=None):
    import torch

    import cudal2.library.torch_op  # noqa: F401  (registers torch.ops.cudal2.hgemm)
    if not isinstance(x, torch.Tensor) or not isinstance(W, torch.Tensor):
        raise TypeError(f"cudal2.linear takes torch tensors, got {type(x).__name__} and {type(W).__name__}")
    if W.dim() != 2 or x.dim() < 1 or x.shape[-1] != W.shape[1]:
        raise InputError(f"cudal2.linear: x is {tuple(x.shape)} and W {tuple(W.shape)}; want x (..., K) and W (N, K)")
    if bias is not None and tuple(bias.shape) != (W.shape[0],):
        raise InputError(f"cudal2.linear: bias is {tuple(bias.shape)}; want ({W.shape[0]},)")
    K, N = W.shape[1], W.shape[0]
    rows = x.reshape(-1, K)
    if rows.shape[0] == 0:
        y = x.new_empty((0, N))
    else:
        y = torch.ops.cudal2.hgemm(rows if rows.is_contiguous() else rows.contiguous(), W)
    if bias is not None:
        y = y + bias
    return y.reshape(*x.shape[:-1], N)


def _forward(self, x):
    import torch
    if isinstance(x, torch.Tensor) and x.is_cuda and x.dtype == torch.float16 and self.weight.is_cuda:
        return linear(x, self.weight, self.bias)
    return type(self).forward(self, x)


def patch(model) -> int:
    import torch
    n = 0
    for m in model.modules():
        if isinstance(m, torch.nn.Linear) and m.weight.dtype == torch.float16 and _MARK not in m.__dict__:
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
