"""The results store: every evaluation persisted as it arrives, in one SQLite file.

Guarantees: `put` commits before it returns, so a run killed at any point keeps every result it
had finished; the same key is never evaluated twice (`get` finds it: that is how runs resume);
sources are stored once by hash; the file is safe to open from several processes (WAL mode).

Does not: decide what a key means. Callers build keys from everything that changes a verdict
(source, build flags, shape, verification and timing settings, GPU).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

from cudal2.result import EvalResult

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (hash TEXT PRIMARY KEY, source TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY, name TEXT, source_hash TEXT, M INTEGER, N INTEGER, K INTEGER,
    ok INTEGER, stage TEXT, created REAL, result TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS results_shape ON results (M, N, K, ok);
"""


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:24]


class StoreError(RuntimeError):
    """The database file is unreadable or not a cudal2 store."""


class Store:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: not a usable cudal2 results database ({e})") from None

    def put_source(self, source: str) -> str:
        h = source_hash(source)
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO sources VALUES (?, ?)", (h, source))
        return h

    def source(self, h: str) -> str | None:
        row = self.db.execute("SELECT source FROM sources WHERE hash = ?", (h,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, r: EvalResult) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?,?,?)",
                            (key, r.name, r.source_hash, r.M, r.N, r.K, int(r.ok), r.stage.value, time.time(),
                             r.to_json()))

    def get(self, key: str) -> EvalResult | None:
        row = self.db.execute("SELECT result FROM results WHERE key = ?", (key,)).fetchone()
        return EvalResult.from_dict(json.loads(row[0])) if row else None

    def results(self, M: int | None = None, N: int | None = None, K: int | None = None) -> list[EvalResult]:
        q, args = "SELECT result FROM results", ()
        if M is not None:
            q, args = q + " WHERE M = ? AND N = ? AND K = ?", (M, N, K)
        return [EvalResult.from_dict(json.loads(r[0])) for r in self.db.execute(q + " ORDER BY created", args)]

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        self.db.close()
