"""The explainer's failure cases on disk: one SQLite database that survives restarts and crashes.

Every change is one transaction in a database in WAL mode with full sync, so a case whose
commit returned is on disk even if the process is killed the next moment. Embeddings are cached
per model name and text: a different embedding model finds none of its own and re-embeds. A
file that is not a readable case database is set aside under a new name and reported, never
silently replaced.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from planner.core.errors import InputError, PlannerError

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cases (
    id TEXT PRIMARY KEY,
    skill TEXT NOT NULL,
    code TEXT NOT NULL,
    request TEXT NOT NULL,
    reason TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '{}',
    suggestion TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('seed', 'learned', 'human')),
    successes INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    demoted INTEGER NOT NULL DEFAULT 0,
    robot TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS cases_by_class ON cases (skill, code);
CREATE TABLE IF NOT EXISTS plans (
    request TEXT NOT NULL,
    steps TEXT NOT NULL,
    robot TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text)
);
"""

CASE_FIELDS = ("id", "skill", "code", "request", "reason", "context", "suggestion", "source", "successes",
               "failures", "demoted", "robot", "created")


class CaseStoreError(PlannerError, RuntimeError):
    """The database cannot be used; the message names the file and what is wrong."""


@dataclass
class StoredCase:
    id: str
    skill: str
    code: str
    request: str
    reason: str
    suggestion: str
    source: str = "seed"
    context: dict = field(default_factory=dict)
    successes: int = 0
    failures: int = 0
    demoted: bool = False
    robot: str = ""          # the robot (namespace) a learned case came from
    created: float = 0.0


def _row_to_case(row: tuple) -> StoredCase:
    values = dict(zip(CASE_FIELDS, row))
    values["context"] = json.loads(values["context"] or "{}")
    if not isinstance(values["context"], dict):
        raise ValueError(f"context is a {type(values['context']).__name__}, not an object")
    values["demoted"] = bool(values["demoted"])
    return StoredCase(**values)


FLOAT_BYTES = np.dtype(np.float32).itemsize


class NotACaseDatabase(sqlite3.DatabaseError):
    """The file opened, and is not a case database of this version."""


class CaseStoreUnwritable(PlannerError):
    """A change the disk refused (full, read-only, no permission): nothing was written, the database
    is as it was, and the caller goes on without the change."""


def damaged(error: sqlite3.DatabaseError) -> bool:
    """Is the file itself bad (not a database, corrupt, another schema), rather than the disk or a
    lock refusing a write? Only a bad file is set aside."""
    return isinstance(error, NotACaseDatabase) or getattr(error, "sqlite_errorname", "") in ("SQLITE_CORRUPT",
                                                                                             "SQLITE_NOTADB")


def set_aside(path: Path) -> Path:
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    os.replace(path, aside)
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            os.replace(companion, aside.with_name(aside.name + suffix))
    return aside


class CaseStore:
    """Thread-safe: the explainer node serves requests from several callback threads."""

    def __init__(self, path: str | Path, set_aside_bad_file: bool = True):
        """`set_aside_bad_file` false: a file that is no case database is an InputError and stays as
        it is (a file a person named on the command line may be anything of theirs)."""
        self.path = Path(path) if str(path) != ":memory:" else None
        self._lock = threading.RLock()
        self.notice = ""     # what happened at opening that someone should hear about
        self.read_only = False  # opened for reading only: the disk, not the file, refused a write
        if self.path is None:
            self._db = self._connect(":memory:")
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._open_writable()
        except sqlite3.DatabaseError as error:
            if not damaged(error):
                self._db = self._open_read_only(error)
                return
            if not set_aside_bad_file:
                raise InputError(f"{self.path} is not a case database ({error}); it is left as it is") from None
            aside = set_aside(self.path)
            self.notice = (f"{self.path} is not a usable case database ({error}); set aside as {aside.name}, "
                           "starting a new one from the seed cases")
            self._db = self._connect(str(self.path))
            return
        try:
            self.notice = self._set_aside_bad_rows()
        except CaseStoreUnwritable as error:
            self.notice = str(error)

    def _open_writable(self) -> sqlite3.Connection:
        assert self.path is not None
        db = None
        try:
            db = self._connect(str(self.path))
            self._check(db)
            return db
        except sqlite3.DatabaseError:
            if db is not None:
                db.close()
            raise

    def _open_read_only(self, error: sqlite3.DatabaseError) -> sqlite3.Connection:
        """The file as it is, for reading, when the disk is full or read-only: the learned cases are
        served and kept; each write tries the file again (`_writable`)."""
        assert self.path is not None
        self.read_only = True
        self.notice = (f"{self.path} cannot be written now ({error}); it is kept as it is and read, and what "
                       "is learned is not saved until it can be written (each change tries again)")
        try:
            db = sqlite3.connect(f"file:{self.path}?immutable=1", uri=True, check_same_thread=False, isolation_level=None)
            self._check(db)
            return db
        except sqlite3.DatabaseError as unreadable:
            self.notice += f"; it cannot be read either ({unreadable}), so the seed cases are served from memory"
            return self._connect(":memory:")

    def _writable(self) -> None:
        """Reopen the file for writing if it was opened read-only and the disk now takes writes."""
        if not self.read_only:
            return
        try:
            db = self._open_writable()
        except sqlite3.DatabaseError as error:
            raise CaseStoreUnwritable(f"{self.path} still cannot be written ({error}); not saved") from None
        self._db.close()
        self._db, self.read_only = db, False

    def _set_aside_bad_rows(self) -> str:
        """Rows the file check passes but no case can be read from (context not JSON) go to a JSON-lines
        file beside the database, and cached vectors cut short are dropped (they are recomputed): one
        bad row must not stop the explainer at every start."""
        assert self.path is not None  # an in-memory database starts empty
        bad_rows: list[dict] = []
        problems: list[str] = []
        with self._lock, self._transaction():
            for row in self._db.execute(f"SELECT {', '.join(CASE_FIELDS)} FROM cases").fetchall():
                try:
                    _row_to_case(row)
                except (ValueError, TypeError, RecursionError) as error:
                    bad_rows.append(dict(zip(CASE_FIELDS, row)))
                    problems.append(str(error))
            self._db.executemany("DELETE FROM cases WHERE id = ?", [(row["id"],) for row in bad_rows])
            bad_vectors = self._db.execute("DELETE FROM embeddings WHERE length(vector) = 0 OR length(vector) % ? != 0",
                                           (FLOAT_BYTES,)).rowcount
        notes = []
        if bad_rows:
            aside = self.path.with_name(f"{self.path.name}.bad-rows-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
            aside.write_text("".join(json.dumps({"row": row, "problem": problem}, default=str) + "\n"
                                     for row, problem in zip(bad_rows, problems)))
            notes.append(f"{len(bad_rows)} unreadable case(s) ({', '.join(str(row['id']) for row in bad_rows[:5])}: "
                         f"{problems[0]}) set aside in {aside.name}")
        if bad_vectors:
            notes.append(f"{bad_vectors} damaged cached embedding(s) dropped, to be recomputed")
        return f"{self.path}: " + "; ".join(notes) if notes else ""

    @staticmethod
    def _connect(target: str) -> sqlite3.Connection:
        db = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.executescript(_SCHEMA)
        db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        return db

    @staticmethod
    def _check(db: sqlite3.Connection) -> None:
        problems = [row[0] for row in db.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise NotACaseDatabase("; ".join(problems[:3]))
        version = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if version is None or version[0] != str(SCHEMA_VERSION):
            raise NotACaseDatabase(f"schema version {version[0] if version else None}, expected {SCHEMA_VERSION}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ---- cases ---------------------------------------------------------------------------------
    def cases(self, include_demoted: bool = True) -> list[StoredCase]:
        query = f"SELECT {', '.join(CASE_FIELDS)} FROM cases" + ("" if include_demoted else " WHERE demoted = 0")
        with self._lock:
            return [_row_to_case(row) for row in self._db.execute(query + " ORDER BY created, id")]

    def get(self, case_id: str) -> StoredCase | None:
        with self._lock:
            row = self._db.execute(f"SELECT {', '.join(CASE_FIELDS)} FROM cases WHERE id = ?", (case_id,)).fetchone()
        return _row_to_case(row) if row else None

    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM cases").fetchone()[0]

    def add(self, cases: list[StoredCase], replace: bool = False) -> int:
        """Cases added (or replaced) in one transaction; without `replace`, existing ids are kept."""
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        rows = [(c.id, c.skill, c.code, c.request, c.reason, json.dumps(c.context, sort_keys=True), c.suggestion,
                 c.source, c.successes, c.failures, int(c.demoted), c.robot, c.created or time.time()) for c in cases]
        with self._lock, self._transaction():
            before = self._db.total_changes
            self._db.executemany(f"{verb} INTO cases VALUES ({', '.join('?' * len(CASE_FIELDS))})", rows)
            return self._db.total_changes - before

    def record_outcome(self, case_id: str, helped: bool, demote_after: int) -> StoredCase | None:
        """Count one use of a case's suggestion; demote it once it failed `demote_after` times
        more than it helped."""
        column = "successes" if helped else "failures"
        with self._lock, self._transaction():
            self._db.execute(f"UPDATE cases SET {column} = {column} + 1 WHERE id = ?", (case_id,))
            self._db.execute("UPDATE cases SET demoted = (failures - successes >= ?) WHERE id = ?",
                             (demote_after, case_id))
        return self.get(case_id)

    def remove(self, case_ids: list[str]) -> int:
        with self._lock, self._transaction():
            before = self._db.total_changes
            self._db.executemany("DELETE FROM cases WHERE id = ?", [(i,) for i in case_ids])
            return self._db.total_changes - before

    # ---- plans that worked ---------------------------------------------------------------------
    def add_plan(self, request: str, steps: list[str], robot: str = "") -> None:
        with self._lock, self._transaction():
            self._db.execute("INSERT INTO plans VALUES (?, ?, ?, ?)", (request, json.dumps(steps), robot, time.time()))

    def plans(self) -> list[tuple[str, list[str]]]:
        """(request, steps) of every plan stored, oldest first; a row whose steps are not a JSON list is skipped."""
        with self._lock:
            rows = self._db.execute("SELECT request, steps FROM plans ORDER BY created").fetchall()
        found = []
        for request, steps in rows:
            try:
                loaded = json.loads(steps)
            except json.JSONDecodeError:
                continue
            if isinstance(loaded, list) and all(isinstance(step, str) for step in loaded):
                found.append((request, loaded))
        return found

    # ---- embeddings ------------------------------------------------------------------------------
    def embeddings(self, model: str, texts: list[str]) -> dict[str, np.ndarray]:
        """Cached vectors of those texts for this model (texts without one are left out)."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(texts))
        with self._lock:
            for start in range(0, len(unique), 500):
                chunk = unique[start:start + 500]
                marks = ", ".join("?" * len(chunk))
                for text, blob in self._db.execute(
                        f"SELECT text, vector FROM embeddings WHERE model = ? AND text IN ({marks})", [model, *chunk]):
                    found[text] = np.frombuffer(blob, dtype=np.float32)
        return found

    def save_embeddings(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        with self._lock, self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                                 [(model, text, np.asarray(v, dtype=np.float32).tobytes()) for text, v in vectors.items()])

    # ---- transactions ----------------------------------------------------------------------------
    def _transaction(self):
        """One write: CaseStoreUnwritable when the disk refuses it (full, read-only), the file kept."""
        self._writable()
        return _Transaction(self._db, self.path)


class _Transaction:
    def __init__(self, db: sqlite3.Connection, path: Path | None):
        self.db = db
        self.path = path

    def __enter__(self):
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise CaseStoreUnwritable(f"{self.path}: {error}; not saved, the database is kept as it was") from None

    def __exit__(self, kind, error, trace):
        try:
            self.db.execute("COMMIT" if kind is None else "ROLLBACK")
        except sqlite3.OperationalError as failed:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise CaseStoreUnwritable(f"{self.path}: {failed}; not saved, the database is kept as it was") from None
        if isinstance(error, sqlite3.OperationalError) and not damaged(error):
            raise CaseStoreUnwritable(f"{self.path}: {error}; not saved, the database is kept as it was") from None
        return False
