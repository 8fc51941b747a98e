"""The population: every candidate the search proposed, per shape, with lineage and score.

Guarantees: lives in the run's SQLite file beside the results store, so a killed search resumes
with everything it had judged; a source is admitted once per shape (dedupe by the hash of its
normalized text); each candidate records its parent, proposer, family and parameters; a shape's
elapsed search time and whether its proposers ran dry ("exhausted") are persisted too.

Does not: judge (the harness does) or choose parents (the proposers do).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from cudal2.problem import Problem

_SCHEMA = """
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY AUTOINCREMENT, shape TEXT NOT NULL, norm_hash TEXT NOT NULL, source_hash TEXT NOT NULL,
    name TEXT, family TEXT, params TEXT, parent INTEGER, proposer TEXT, round INTEGER, created REAL,
    status TEXT NOT NULL DEFAULT 'pending', ok INTEGER, stage TEXT, score REAL, reason TEXT, meta TEXT,
    UNIQUE (shape, norm_hash));
CREATE TABLE IF NOT EXISTS shapes (shape TEXT PRIMARY KEY, elapsed_s REAL NOT NULL DEFAULT 0,
    exhausted INTEGER NOT NULL DEFAULT 0);
"""


def normalized_hash(source: str) -> str:
    """Hash of the source with comments and whitespace runs removed: cosmetic edits are duplicates.
    The comments that are directives (`/* cudal2-launch ... */`, `// cudal2-shapes: ...`) are
    kept: two sources that differ in their launch spec or shape claim are different kernels."""
    return hashlib.sha256(" ".join(_strip_comments(source).split()).encode()).hexdigest()[:24]


def _strip_comments(source: str) -> str:
    r"""The source with each comment but a directive replaced by a space, in one pass (the regex
    //[^\n]*|/\*.*?\*/ rescanned to the end from every unclosed /*: 8,000 of them, 2.4 s, and
    this runs on every completion the search admits). An unclosed /* comments out the rest."""
    out, i, n = [], 0, len(source)
    while i < n:
        j = source.find("/", i)
        if j < 0 or j + 1 >= n:
            out.append(source[i:])
            break
        out.append(source[i:j])
        kind = source[j + 1]
        if kind not in "/*":
            out.append("/")
            i = j + 1
            continue
        end = source.find("\n" if kind == "/" else "*/", j + 2)
        end = n if end < 0 else end + (0 if kind == "/" else 2)
        body = source[j:end]
        out.append(body if body[2:].lstrip().startswith("cudal2-") else " ")
        i = end
    return "".join(out)


# Build failures that say nothing about the point (cudal2.harness.build's reasons for them)
TRANSIENT = ("build timed out", "sandbox:", "compiler not found")


@dataclass
class Member:
    id: int
    name: str
    family: str
    params: dict[str, Any]
    parent: int | None
    proposer: str
    status: str
    ok: bool | None
    stage: str | None
    score: float | None
    source_hash: str
    reason: str = ""


class Population:
    def __init__(self, db_path: str):
        self.db = sqlite3.connect(db_path, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(_SCHEMA)
        if "exhausted" not in {r[1] for r in self.db.execute("PRAGMA table_info(shapes)")}:
            # A database from before budgets could be raised on resume: its "done" flag also marked
            # shapes stopped by a budget, so it is left unread and no shape starts out exhausted.
            with self.db:
                self.db.execute("ALTER TABLE shapes ADD COLUMN exhausted INTEGER NOT NULL DEFAULT 0")

    def add(self, p: Problem, name: str, source: str, source_hash: str, family: str, params: dict | None,
            parent: int | None, proposer: str, round_: int, meta: dict | None = None) -> int | None:
        """The new member's id, or None when this shape already has the same normalized source."""
        try:
            with self.db:
                cur = self.db.execute(
                    "INSERT INTO candidates (shape, norm_hash, source_hash, name, family, params, parent, proposer, round,"
                    " created, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (str(p), normalized_hash(source), source_hash, name, family, json.dumps(params or {}, sort_keys=True),
                     parent, proposer, round_, time.time(), json.dumps(meta or {})))
            return cur.lastrowid
        except sqlite3.IntegrityError:
            return None

    def record(self, member_id: int, ok: bool, stage: str, score: float | None, reason: str = "") -> None:
        with self.db:
            self.db.execute("UPDATE candidates SET status='done', ok=?, stage=?, score=?, reason=? WHERE id=?",
                            (int(ok), stage, score, reason, member_id))

    def meta(self, member_id: int) -> dict:
        row = self.db.execute("SELECT meta FROM candidates WHERE id=?", (member_id,)).fetchone()
        return json.loads(row[0] or "{}") if row else {}

    _COLUMNS = "id, name, family, params, parent, proposer, status, ok, stage, score, source_hash, reason"

    @staticmethod
    def _member(r: tuple) -> Member:
        return Member(r[0], r[1], r[2], json.loads(r[3] or "{}"), r[4], r[5], r[6],
                      None if r[7] is None else bool(r[7]), r[8], r[9], r[10], r[11] or "")

    def members(self, p: Problem, status: str | None = None) -> list[Member]:
        q = f"SELECT {self._COLUMNS} FROM candidates WHERE shape=?"
        args: tuple = (str(p),)
        if status:
            q, args = q + " AND status=?", args + (status,)
        return [self._member(r) for r in self.db.execute(q + " ORDER BY id", args).fetchall()]

    def member(self, member_id: int) -> Member:
        return self._member(self.db.execute(f"SELECT {self._COLUMNS} FROM candidates WHERE id=?", (member_id,)).fetchone())

    def best(self, p: Problem, k: int = 1) -> list[Member]:
        scored = [m for m in self.members(p, "done") if m.score is not None]
        return sorted(scored, key=lambda m: -m.score)[:k]

    def family_bests(self) -> list[tuple[str, str, float]]:
        """(family, shape, best score) for every shape a family has a judged candidate at."""
        rows = self.db.execute("SELECT family, shape, MAX(score) FROM candidates WHERE status='done' AND score IS NOT "
                               "NULL AND family != '' GROUP BY family, shape").fetchall()
        return [(f, s, float(v)) for f, s, v in rows]

    def judged_points(self, family: str) -> list[tuple[str, dict, float]]:
        """(shape, params, score) of every template candidate of `family` that was judged and scored."""
        rows = self.db.execute("SELECT shape, params, score FROM candidates WHERE status='done' AND score IS NOT NULL "
                               "AND proposer='template' AND family=?", (family,)).fetchall()
        return [(s, json.loads(x or "{}"), float(v)) for s, x, v in rows]

    def build_failures(self) -> list[tuple[str, str, dict]]:
        """(family, shape, params) of every template candidate, at any shape, that failed to build for
        a reason of its own (not a timeout or a missing compiler or sandbox: another try may pass)."""
        rows = self.db.execute("SELECT family, shape, params, reason FROM candidates WHERE status='done' AND ok=0 "
                               "AND stage='build' AND proposer='template' AND family != ''").fetchall()
        return [(f, s, json.loads(x or "{}")) for f, s, x, why in rows if not (why or "").startswith(TRANSIENT)]

    def last_round(self, p: Problem) -> int:
        row = self.db.execute("SELECT MAX(round) FROM candidates WHERE shape=?", (str(p),)).fetchone()
        return row[0] or 0

    def elapsed(self, p: Problem) -> float:
        row = self.db.execute("SELECT elapsed_s FROM shapes WHERE shape=?", (str(p),)).fetchone()
        return row[0] if row else 0.0

    def add_elapsed(self, p: Problem, seconds: float) -> None:
        with self.db:
            self.db.execute("INSERT INTO shapes (shape, elapsed_s) VALUES (?, ?) ON CONFLICT(shape) "
                            "DO UPDATE SET elapsed_s = elapsed_s + excluded.elapsed_s", (str(p), seconds))

    def mark_exhausted(self, p: Problem) -> None:
        with self.db:
            self.db.execute("INSERT INTO shapes (shape, exhausted) VALUES (?, 1) "
                            "ON CONFLICT(shape) DO UPDATE SET exhausted = 1", (str(p),))

    def exhausted(self, p: Problem) -> bool:
        row = self.db.execute("SELECT exhausted FROM shapes WHERE shape=?", (str(p),)).fetchone()
        return bool(row and row[0])

    def close(self) -> None:
        self.db.close()
