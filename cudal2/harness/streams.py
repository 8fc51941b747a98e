"""cupy's view of a CUDA stream that someone else owns (torch's current stream, the bench's, the
judge's), given by its raw handle.

Guarantees: `cupy_stream(handle)` returns a cupy stream object that enqueues on that handle, built
once per handle and process (it sits on per-call paths: the stamp's launches, the feed's checks),
through cupy's stream-protocol constructor where cupy has one (`Stream.from_external`, cupy 14 on)
and its older `ExternalStream` elsewhere, which cupy 14 warns about on every construction.

Does not: own, create, synchronize or destroy the stream, or check that the handle is live (a
handle destroyed and reused by a new stream names the new one, as the raw handle would).
"""

from __future__ import annotations

import functools


class _Handle:
    """A raw handle behind the CUDA stream protocol (`__cuda_stream__`: version 0, the handle)."""

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


@functools.lru_cache(maxsize=64)
def cupy_stream(handle: int):
    import cupy as cp
    if hasattr(cp.cuda.Stream, "from_external"):
        return cp.cuda.Stream.from_external(_Handle(handle))
    return cp.cuda.ExternalStream(handle)
