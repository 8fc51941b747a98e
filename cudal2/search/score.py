"""The one number the search ranks by.

Guarantees: `score` is the geometric mean, over the timing modes measured, of the speedup
against `vendor_default` (the faster of cuBLAS TN/NN and the cuBLASLt heuristic, i.e. what a
user gets without tuning); a result that did not pass every check, or whose speedups are not
all finite positive numbers, scores None.

Does not: reward anything but verified speed (RL rewards build their own parts on top).
"""

from __future__ import annotations

import math

from cudal2.result import EvalResult

BASELINE = "vendor_default"


def score(r: EvalResult) -> float | None:
    if not r.ok:
        return None
    xs = [s[BASELINE] for s in r.speedup.values() if BASELINE in s]
    if not xs or not all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in xs):
        return None   # nothing to rank by (a zero or NaN speedup would raise or rank as NaN)
    return math.exp(sum(map(math.log, xs)) / len(xs))
