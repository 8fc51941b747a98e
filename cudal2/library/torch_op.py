"""`torch.ops.cudal2.hgemm(A, B)`: the library as a torch custom op, so `torch.compile` can trace
through it (the fake implementation gives the output's shape) and CUDA graphs can capture it
(the call runs on torch's current stream and allocates through torch's caching allocator).

Import this module to register the op; torch is needed only here.
"""

from __future__ import annotations

import torch

from cudal2.library import matmul


@torch.library.custom_op("cudal2::hgemm", mutates_args=())
def hgemm(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """C = A @ B.T with fp16 A (M×K), B (N×K), through the cudal2 kernel library."""
    return matmul(A, B)


@hgemm.register_fake
def _(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    return A.new_empty((A.shape[0], B.shape[0]))
