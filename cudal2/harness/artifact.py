"""What crosses into the judge's worker: a built artifact and how to judge it, never a source.

Guarantees: a `JudgeRequest` pickles whole (the worker receives it as one typed object); it
names the binary (a cubin under contract v2, a shared library for trusted v1 host code), its
kind and launch spec, the shape to time, the shapes to verify first, and whether this is a
re-judgement.

Does not: build, load or run anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cudal2.config import Config


@dataclass
class JudgeRequest:
    binary: str                  # path of the cubin (kind "cubin") or of the shared library
    kind: str                    # "cubin" | "shared_object"
    spec: dict | None            # the v2 launch spec (launch.LaunchSpec.to_dict())
    M: int
    N: int
    K: int
    cfg: Config
    verify_shapes: list[tuple[int, int, int]] = field(default_factory=list)
    light_shapes: list[tuple[int, int, int]] = field(default_factory=list)  # exact, Gaussian and cancelling trials only
    time_it: bool = True
    rejudge: bool = False        # a second opinion: fresh process, positive-mean timing inputs
