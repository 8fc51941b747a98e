"""The kernel library's manifest: one JSON file per architecture folder, listing every entry.

Guarantees: `read` validates every entry (required fields, types, shape sanity, the source file
present and matching its sha256, the shipped cubin present and matching its `device_sha256`, and
its launch spec) and raises `LibraryError` naming the file and the entry on any
problem, so a corrupt library never half-loads; a library holds contract v2 entries only (device
code, a cubin and its launch spec): an entry without a binary (v1 host code, which would need a
compiler and the candidate's host code in the user's process) is refused by name; `write` replaces the file atomically, so a crash
mid-write leaves the old manifest intact. An entry the product bench served stays beside the one
that replaced it, marked `extra[STANDBY]`, until `settle` keeps whichever the bench serves.

Does not: build or load binaries (see `runtime.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cudal2.problem import MAX_DIM

MANIFEST = "manifest.json"
VERSION = 1
# The vendor on the operands as a caller holds them: cuBLAS TN and the cuBLASLt heuristic, what
# F.linear runs on a weight stored [N][K]. The judge's vendor_default also counts cuBLAS NN on a
# copy of B transposed outside timing, which no caller has; at M = 128 it is 5-6% faster than TN
# (results/sm90raw_l2hint_h100_2026-11-25.json), so it kept wins over F.linear out of the library.
LAYOUT_BASELINES = ("cublas_tn", "cublaslt")


class LibraryError(RuntimeError):
    """The library on disk is unusable; the message names the file."""


@dataclass
class Entry:
    id: str
    M: int | None                # None for an M-range entry
    N: int
    K: int
    family: str
    params: dict[str, Any]
    provenance: dict[str, Any]   # {"kind": "template" | "llm" | "sass", ...}
    source: str                  # file name beside the manifest
    source_sha256: str
    device_sha256: str           # hash of the device code the generating run built
    build: dict[str, Any]        # nvcc version, flags, archs
    measured: dict[str, Any]     # times (us) and speedups per mode and baseline, score
    gpu: dict[str, Any]          # name, driver
    date: str
    m_range: list[int] | None = None   # [lo, hi] for an M-range entry
    extra: dict[str, Any] = field(default_factory=dict)
    binary: str | None = None    # the cubin beside the manifest (its sha256 is device_sha256); required by `read`
    spec: dict[str, Any] | None = None   # the launch spec the cubin is launched from; required by `read`

    def covers(self, M: int, N: int, K: int) -> bool:
        if (N, K) != (self.N, self.K):
            return False
        return M == self.M if self.m_range is None else self.m_range[0] <= M <= self.m_range[1]

    def problem(self):
        """The shape the entry is judged and timed at, as a `problem.Problem`: its own, or the top of
        its M-range."""
        from cudal2.problem import Problem
        return Problem(self.M if self.m_range is None else self.m_range[1], self.N, self.K)

    def claim(self):
        """What dispatch serves this entry at, as a `problem.ShapeClaim`: the shapes a judge of its
        binary must verify (its source's own claim may be narrower, or absent)."""
        from cudal2.problem import Problem, ShapeClaim
        if self.m_range is None:
            return ShapeClaim(exact=(Problem(self.M, self.N, self.K),))
        return ShapeClaim(ranges=((self.m_range[0], self.m_range[1], self.N, self.K),))

    @property
    def score(self) -> float:
        return float(self.measured.get("score") or 0.0)

    def speedups(self) -> dict[str, float]:
        """Speedup over vendor_default per timing mode: the latest bench's (`cudal2 library bench
        --update`) when there is one, else the generating run's."""
        if "bench" in self.measured:   # the latest bench decides, even when it measured nothing (a failure)
            return dict(self.measured["bench"].get("speedup") or {})
        return {m: s["vendor_default"] for m, s in self.measured.get("speedup", {}).items() if "vendor_default" in s}

    def layout_speedups(self) -> dict[str, float]:
        """The generating run's speedup per timing mode over the faster of LAYOUT_BASELINES (the
        smaller of the two paired speedups); where a run recorded not both, over vendor_default."""
        out = {}
        for m, s in self.measured.get("speedup", {}).items():
            if all(b in s for b in LAYOUT_BASELINES):
                out[m] = min(s[b] for b in LAYOUT_BASELINES)
            elif "vendor_default" in s:
                out[m] = s["vendor_default"]
        return out

    def publishable(self, margin: float) -> bool:
        """Measured by the judge no slower than the vendor on the caller's own operands in any timing
        mode, and faster by at least `margin` in one: what a search winner needs to go into the
        library. The kernel-only modes only pre-filter; serving is `wins`, which asks the margin in
        every mode of the product bench against F.linear (before any bench, over vendor_default in
        every mode), so a published entry is never served on this test alone. Why one mode: the
        kernel-only server mode (one call after a flush) read 1024x1024x12288 at 1.008 beside 1.071
        offline, while the product path's flushed mode read the two entries published that day at
        1.2-1.5 (results/product_bench_new_h100_2026-12-06.jsonl): it is no guide to what the
        product bench measures, so it may veto a loss but not decide the margin."""
        s = self.layout_speedups()
        # (a negative margin, for tests of the mechanics, lowers the floor with it)
        return bool(s) and min(s.values()) >= min(1.0, 1.0 + margin) and max(s.values()) >= 1.0 + margin

    def wins(self, margin: float) -> bool:
        """Measured, slower than the vendor in no mode of any bench it keeps (the latest and the
        `HISTORY` before it), and faster by at least `margin` in every mode on the median of those
        benches. Two runs on the H100 about ten minutes apart read 8192^3's entry 1.036 / 1.010 /
        1.046 and 1.035 / 1.033 / 1.059: a run's ratios move by about 2%, as much as the margin, so
        the latest run alone served and dropped the same entries from one update to the next; a
        loss anywhere is still a veto."""
        s = self.speedups()
        if not s or min(s.values()) < 1.0:
            return False
        kept = [h.get("speedup") or {} for h in self.measured.get("bench_history", [])]
        if any(not h or min(h.values()) < 1.0 for h in kept):
            return False
        return all(statistics.median([v] + [h[m] for h in kept if m in h]) >= 1.0 + margin for m, v in s.items())


_REQUIRED = {f for f in Entry.__dataclass_fields__ if f not in ("m_range", "extra", "binary", "spec")}


def sha256_text(text: str) -> str:
    """The manifest's `source_sha256` of a source text (the hash of its UTF-8 bytes, as on disk)."""
    return sha256_bytes(text.encode())


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


def read(folder: Path, check_binaries: bool = True) -> list[Entry]:
    path = folder / MANIFEST
    if not path.exists():
        return []
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as e:
        # (ValueError covers JSONDecodeError and UnicodeDecodeError, and the json module's own refusal
        # of an integer past Python's 4300-digit limit; RecursionError its lists or objects nested past
        # the recursion limit: both came out of Library() and a user's first cudal2.matmul; review 44)
        raise LibraryError(f"{path}: cannot read the manifest ({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(doc.get("entries"), list):
        raise LibraryError(f"{path}: not a cudal2 manifest of version {VERSION}")
    entries, ids = [], set()
    for i, d in enumerate(doc["entries"]):
        where = f"{path}: entry {i}"
        if not isinstance(d, dict) or _REQUIRED - set(d):
            missing = sorted(_REQUIRED - set(d)) if isinstance(d, dict) else "all"
            raise LibraryError(f"{where}: missing fields {missing}")
        try:
            e = Entry(**{k: v for k, v in d.items() if k in Entry.__dataclass_fields__})
        except TypeError as err:
            raise LibraryError(f"{where}: {err}") from None
        why = _malformed(e)
        if why:
            raise LibraryError(f"{where} ({str(e.id)[:80]!s}): {why}")
        if e.id in ids:
            raise LibraryError(f"{where}: duplicate id {e.id}")
        ids.add(e.id)
        src = folder / e.source
        if not src.is_file():
            raise LibraryError(f"{where} ({e.id}): source file {src} is missing")
        if sha256_file(src) != e.source_sha256:
            raise LibraryError(f"{where} ({e.id}): {src} does not match its sha256 in the manifest")
        if not isinstance(e.binary, str) or not isinstance(e.spec, dict):
            raise LibraryError(f"{where} ({e.id}): no shipped binary and launch spec (contract v1 host code is not a "
                               "library entry: regenerate the shape as contract v2 with `cudal2 generate`)")
        if check_binaries:
            binf = folder / e.binary
            if not binf.is_file():
                raise LibraryError(f"{where} ({e.id}): binary {binf} is missing (rebuild: cudal2 library build)")
            if sha256_file(binf) != e.device_sha256:
                raise LibraryError(f"{where} ({e.id}): {binf} does not match its device_sha256 in the manifest "
                                   "(corrupt? rebuild: cudal2 library build)")
        entries.append(e)
    return entries


def _dim(x: Any) -> bool:
    # the kernels take M, N and K as 32-bit ints (the dispatcher truncates to them)
    return isinstance(x, int) and not isinstance(x, bool) and 0 < x <= MAX_DIM


def _number(x: Any) -> bool:
    import math
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _speedups_ok(sp: Any, nested: bool) -> bool:
    """{mode: number} (a bench record), or {mode: {baseline: number}} (a run's), all finite."""
    if not isinstance(sp, dict):
        return False
    return all(isinstance(m, str) and (_speedups_ok(v, False) if nested else _number(v)) for m, v in sp.items())


def _plain_name(x: Any) -> bool:
    """A file name beside the manifest: no folder part, so nothing outside the library folder is
    read, hashed, overwritten or deleted (writer.add unlinks a replaced entry's files; a rebuild
    writes `<id>.cubin`)."""
    return isinstance(x, str) and x not in ("", ".", "..") and "/" not in x and "\\" not in x and "\0" not in x


def _malformed(e: Entry) -> str:
    """Why an entry's fields are not what the library's code relies on ('' when they are): every
    bad value is refused here, in one line, never met later as a TypeError or IndexError in a
    lookup or a user's call (review 42)."""
    if not _plain_name(e.id):   # `cudal2 library build` writes `<id>.cubin` beside the manifest: an id
        # of '../x' wrote x.cubin outside the library (review 52)
        return f"id {str(e.id)[:80]!r} is not a plain name (non-empty, no folder part)"
    if not (_dim(e.N) and _dim(e.K)) or e.K % 8:
        return f"bad shape N={e.N!r} K={e.K!r} (positive 32-bit ints, K a multiple of 8)"
    if (e.M is None) == (e.m_range is None):
        return f"bad shape M={e.M!r} m_range={e.m_range!r} (exactly one of them)"
    if e.M is not None and not _dim(e.M):
        return f"bad shape M={e.M!r} (a positive 32-bit int)"
    if e.m_range is not None and not (isinstance(e.m_range, list) and len(e.m_range) == 2
                                      and all(map(_dim, e.m_range)) and e.m_range[0] <= e.m_range[1]):
        return f"bad m_range {e.m_range!r} (want [lo, hi], positive 32-bit ints, lo <= hi)"
    for name in ("family", "source_sha256", "device_sha256", "date"):
        if not isinstance(getattr(e, name), str):
            return f"{name} {getattr(e, name)!r} is not a string"
    for name in ("params", "provenance", "build", "measured", "gpu", "extra"):
        if not isinstance(getattr(e, name), dict):
            return f"{name} is not an object"
    for name in ("source", "binary"):
        if getattr(e, name) is not None and not _plain_name(getattr(e, name)):
            return f"{name} {getattr(e, name)!r} is not a plain file name beside the manifest"
    m = e.measured
    if m.get("score") is not None and not _number(m["score"]):
        return f"measured score {m['score']!r} is not a finite number"
    if "speedup" in m and not _speedups_ok(m["speedup"], True):
        return "measured speedups are not {mode: {baseline: finite number}}"
    benches = ([m["bench"]] if "bench" in m else []) + (m.get("bench_history", []) if isinstance(
        m.get("bench_history", []), list) else [None])
    if not all(isinstance(b, dict) and _speedups_ok(b.get("speedup") or {}, False) for b in benches):
        return "a bench record is not an object with {mode: finite number} speedups"
    return ""   # a launch spec that does not resolve disables its entry at load (the vendor runs)


def write(folder: Path, entries: list[Entry]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"version": VERSION, "entries": [asdict(e) for e in sorted(entries, key=lambda e: (e.N, e.K, e.M or 0))]}
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".manifest.")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    os.replace(tmp, folder / MANIFEST)


HISTORY = 2   # bench records an entry keeps from before its latest (`Entry.wins`: a loss there is a veto)
# extra[STANDBY] = the id of the entry that replaced this one: kept (and served while it wins and the
# replacement does not) until a product bench of the replacement settles which of the two stays
STANDBY = "standby_for"


def product_measured(e: Entry) -> bool:
    return e.measured.get("bench", {}).get("kind") == "product"


def proven(e: Entry, margin: float) -> bool:
    """Served on the product bench's own record (not on the judge's numbers alone)."""
    return product_measured(e) and e.wins(margin)


def unlink_files(folder: Path, gone: list[Entry], kept: list[Entry]) -> None:
    """Delete the source and cubin of entries no longer in the manifest, unless a kept one names them."""
    names = {n for x in kept for n in (x.source, x.binary) if n}
    for x in gone:
        for n in (x.source, x.binary):
            if n and n not in names:
                (folder / n).unlink(missing_ok=True)


def settle(folder: Path, margin: float) -> list[str]:
    """Decide every standby entry whose replacement a product bench has measured: the replacement stays
    if it wins by `margin` (the standby goes), else the standby comes back and the replacement goes
    (a replacement no longer in the manifest brings it back too). One atomic manifest write; the
    files of the entries that went are deleted. What happened, one line per standby settled."""
    entries = read(folder)
    by_id = {e.id: e for e in entries}
    gone: list[Entry] = []
    said = []
    for s in [e for e in entries if STANDBY in e.extra]:
        new = by_id.get(s.extra[STANDBY])
        if new is not None and not product_measured(new):
            continue                      # not measured yet: both stay, the winner serves
        if new is not None and new.wins(margin):
            gone.append(s)
            said.append(f"{new.id} serves; {s.id}, which it replaced, is removed")
            continue
        del s.extra[STANDBY]
        if new is not None:
            gone.append(new)
        said.append(f"{s.id} is back: {new.id if new else 'its replacement'} does not serve")
    if said:
        kept = [e for e in entries if e not in gone]
        write(folder, kept)
        unlink_files(folder, gone, kept)
    return said


def record_bench(folder: Path, records: dict[str, dict]) -> int:
    """Write each entry's bench record (kind, speedup per mode, ...; an empty speedup for a failed
    entry, which is then not served) into its `measured["bench"]`, dated today, and move the one it
    replaces to the front of `measured["bench_history"]` (the last HISTORY kept): what `Entry.wins`,
    and so dispatch, use. Returns how many entries were updated."""
    import datetime as dt
    entries = read(folder)
    for e in entries:
        if e.id in records:
            if "bench" in e.measured:
                e.measured["bench_history"] = [e.measured["bench"], *e.measured.get("bench_history", [])][:HISTORY]
            e.measured["bench"] = {**records[e.id], "date": dt.date.today().isoformat()}
    write(folder, entries)
    return sum(e.id in records for e in entries)
