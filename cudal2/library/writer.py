"""Writing winners into the library folder.

Guarantees: an entry is written only from a result that passed every check; its source is
stored beside the manifest under a content-derived name, and its cubin (the binary the judge
loaded, whose sha256 is the entry's device hash) beside it (contract v2 only: `add` refuses an
entry without one); for a shape (or an M-range) already in the
library the better-scoring entry is kept (a tie keeps the existing one), comparing against an existing entry's
score measured now when the caller passes one (`rescored`), and a replaced entry that the product
bench serves stays on standby until a product bench of its replacement decides (`manifest.settle`);
the manifest is replaced atomically.

Does not: measure or compare across GPUs: scores from the generating run are taken as measured.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from cudal2.library import manifest
from cudal2.library.manifest import Entry
from cudal2.result import EvalResult


def entry_from(r: EvalResult, source: str, family: str, params: dict, provenance: dict[str, Any], score: float,
               nvcc: str, flags: list[str], archs: list[str]) -> Entry:
    sha = manifest.sha256_text(source)
    eid = f"{r.M}x{r.N}x{r.K}-{family or 'custom'}-{sha[:10]}"
    measured = {"score": score, "speedup": r.speedup, "tflops": r.tflops, "floor_fraction": r.floor_fraction,
                "times_us": {m: {k: t.median_us for k, t in rs.items()} for m, rs in r.times.items()}}
    cubin = r.build.get("kind") == "cubin"
    return Entry(id=eid, M=r.M, N=r.N, K=r.K, family=family, params=params, provenance=provenance,
                 source=f"{eid}.cu", source_sha256=sha, device_sha256=r.build.get("device_sha256", ""),
                 build={"nvcc": nvcc, "flags": flags, "archs": archs, "resources": r.build.get("resources", {})},
                 measured=measured, gpu={k: r.gpu.get(k) for k in ("name", "driver", "sm_count", "cc")},
                 date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                 binary=f"{eid}.cubin" if cubin else None, spec=r.build.get("spec") if cubin else None)


def add(folder: Path, e: Entry, source: str, rescored: dict[str, float] | None = None, binary: str | None = None,
        margin: float = 0.0) -> bool:
    """True when `e` went into the library (new shape, or better than the entry it replaces), with
    `binary` (the cubin the harness judged) copied beside the manifest as `e.binary`. Never a loss:
    `e` must lose to the vendor on the caller's operands in no measured mode and beat it by `margin`
    in one (`Entry.publishable`); serving it is `Entry.wins`, the margin in every mode, decided again
    by every bench. `rescored` maps an existing entry's id to its score measured beside `e`'s, used
    instead of the manifest's."""
    if e.binary is None or e.spec is None or binary is None:
        raise ValueError(f"{e.id}: the library holds contract v2 entries only (a cubin and its launch spec)")
    if not e.publishable(margin):
        return False
    entries = manifest.read(folder)
    # The entries `e` would stand beside at the same coverage: one exact shape, or one M-range (a
    # reordered M-range entry of `cudal2 sass` is compared with its parent measured now; review 42:
    # only exact shapes were, so a slower reorder of an M-range entry was published beside it).
    same = [x for x in entries if (x.M, x.m_range, x.N, x.K) == (e.M, e.m_range, e.N, e.K)]
    rescored = rescored or {}
    if any(rescored.get(x.id, x.score) >= e.score for x in same):
        return False
    folder.mkdir(parents=True, exist_ok=True)
    (folder / e.source).write_text(source)
    (folder / e.binary).write_bytes(Path(binary).read_bytes())
    # A replaced entry the product bench serves stays, on standby for `e`, until a product bench of
    # `e` decides between them (`manifest.settle`): a higher judge score is no proof that `e` serves
    # (the judge's cold-L2 timing against the product bench's warm graph mode), and dropping it
    # here could trade a served entry for one the bench does not serve. The best-scoring such
    # entry is kept; the rest go as before.
    proven = sorted((x for x in same if manifest.proven(x, margin)), key=lambda x: x.score)[-1:]
    for x in proven:
        x.extra[manifest.STANDBY] = e.id
    keep = [x for x in entries if x not in same] + proven
    manifest.write(folder, keep + [e])
    manifest.unlink_files(folder, [x for x in same if x not in proven], keep + [e])
    return True
