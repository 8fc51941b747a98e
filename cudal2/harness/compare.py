"""Output comparisons used by the judge's stages.

Guarantees: every comparison fails on any NaN or Inf in the candidate's output; `exact`
demands equality with the exactly-representable result; `tolerance` bounds the candidate's
error against a float64 reference by a multiple of the vendor library's own error on the same
inputs (relative Frobenius norm and largest element), so the bound adapts to shape and data
instead of being a fixed number; `bitwise` compares raw bits.

Does not: choose inputs or the multiples (see `VerifyConfig`).
"""

from __future__ import annotations

import cupy as cp


def reference(A: cp.ndarray, B: cp.ndarray) -> cp.ndarray:
    """A·Bᵀ in float64 from the fp16 inputs."""
    return A.astype(cp.float64) @ B.astype(cp.float64).T


def _nonfinite(out: cp.ndarray) -> int:
    return int((~cp.isfinite(out)).sum())


def exact(out: cp.ndarray, ref: cp.ndarray) -> tuple[bool, dict]:
    want = ref.astype(cp.float16)  # integer sums: exact in float64, rounded once like the contract
    # one count per element: a NaN is both unequal and non-finite, and was counted twice
    bad = int(((out != want) | ~cp.isfinite(out)).sum())
    return bad == 0, {"mismatches": bad, "elements": int(out.size)}


def _errors(x: cp.ndarray, ref: cp.ndarray, ref_norm: float) -> tuple[float, float]:
    d = x.astype(cp.float64) - ref
    return float(cp.linalg.norm(d.ravel())) / ref_norm, float(cp.abs(d).max())


def tolerance(out: cp.ndarray, ref: cp.ndarray, vendor: cp.ndarray, ratio: float, max_ratio: float) -> tuple[bool, dict]:
    bad = _nonfinite(out)
    ref_norm = max(float(cp.linalg.norm(ref.ravel())), 1e-30)
    v_rel, v_max = _errors(vendor, ref, ref_norm)
    stats = {"nonfinite": bad, "vendor_rel": v_rel, "vendor_max": v_max}
    if bad:
        return False, stats
    rel, mx = _errors(out, ref, ref_norm)
    # Floors keep a perfect vendor result (error 0) from demanding perfection of the candidate.
    rel_bound = ratio * max(v_rel, 2.0 ** -14)
    max_bound = max_ratio * max(v_max, 2.0 ** -14 * float(cp.abs(ref).max()))
    stats.update(rel=rel, max=mx, rel_ratio=rel / max(v_rel, 1e-30), rel_bound=rel_bound, max_bound=max_bound)
    return rel <= rel_bound and mx <= max_bound, stats


def bitwise(a: cp.ndarray, b: cp.ndarray) -> tuple[bool, dict]:
    diff = int((a.view(cp.uint16) != b.view(cp.uint16)).sum())
    return diff == 0, {"differing": diff}
