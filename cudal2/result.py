"""The one evaluation-result type, shared by the harness, the search, the RL rewards and the library.

Guarantees: an `EvalResult` round-trips through `to_dict`/`from_dict` (JSON-safe), names the
stage it reached, and when it failed, the stage that failed with a one-line reason. Times are
in microseconds and name their mode. `ok` is True only when every check passed.

Does not: decide anything. Verdicts are made in the harness; this module only carries them.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Stage(str, Enum):
    """Stages in the order the harness runs them; `DONE` means every check passed."""

    PARSE = "parse"            # an LLM completion that could not become a source file
    POLICY = "policy"
    BUILD = "build"
    LOAD = "load"
    EXACT = "exact"
    GAUSSIAN = "gaussian"
    REPEAT = "repeat"
    INPUTS = "inputs"
    CANARY = "canary"
    DETERMINISM = "determinism"
    TIMING = "timing"
    SANITY = "sanity"
    DONE = "done"


class Fault(str, Enum):
    """Ways a candidate can take its worker down; each costs that candidate only."""

    HANG = "hang"              # watchdog expired; the worker was killed
    CRASH = "crash"            # the worker process died (host segfault, abort)
    CUDA_ERROR = "cuda_error"  # a sticky CUDA error (illegal address...); the worker was replaced


@dataclass
class Timing:
    """One runner's times in one mode, in microseconds. `series_us` holds the samples in the order
    they were taken: sample i of every runner timed in the same call belongs to the same round."""

    median_us: float
    p90_us: float
    samples: int
    series_us: list[float] = field(default_factory=list)


@dataclass
class EvalResult:
    name: str
    source_hash: str
    M: int
    N: int
    K: int
    stage: Stage = Stage.POLICY           # the stage reached (the failing one when not ok)
    ok: bool = False
    reason: str = ""                      # one line; empty when ok
    fault: Fault | None = None
    build: dict[str, Any] = field(default_factory=dict)     # resources, flags, log excerpt, cached
    checks: dict[str, Any] = field(default_factory=dict)    # error statistics per check
    times: dict[str, dict[str, Timing]] = field(default_factory=dict)  # mode -> runner -> Timing
    speedup: dict[str, dict[str, float]] = field(default_factory=dict)  # mode -> baseline -> ratio
    tflops: dict[str, float] = field(default_factory=dict)             # mode -> candidate TFLOP/s
    floor_fraction: dict[str, float] = field(default_factory=dict)     # mode -> floor / time
    gpu: dict[str, Any] = field(default_factory=dict)       # name, sm clock, driver...
    profile: dict[str, Any] = field(default_factory=dict)   # Nsight Compute metrics
    elapsed_s: float = 0.0

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    def fail(self, stage: Stage, reason: str, fault: Fault | None = None) -> "EvalResult":
        self.stage, self.ok, self.fault = stage, False, fault
        self.reason = " ".join(reason.split())[:500]
        return self

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["stage"] = self.stage.value
        d["fault"] = self.fault.value if self.fault else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalResult":
        d = dict(d)
        d["stage"] = Stage(d["stage"])
        d["fault"] = Fault(d["fault"]) if d.get("fault") else None
        d["times"] = {m: {r: Timing(**t) for r, t in rs.items()} for m, rs in d.get("times", {}).items()}
        return cls(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)
