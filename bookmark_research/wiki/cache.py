"""Work the wiki does not repeat: verified reads and claim checks remembered while their files are unchanged.

Searching or linting thousands of pages would otherwise re-hash every revision file and re-verify every
cited claim on each call. Results are kept in memory, keyed by the identity of every file they were
computed from (inode, size, modification and change times, in nanoseconds). Any replacement or edit of
one of those files changes its identity, so the work is done again. As in Git's index, a file changed
within the last :data:`SETTLE_SECONDS` is never trusted from memory (its timestamp could still equal
that of a later edit), so fresh files are always checked in full.

Heading anchors and links of rendered Markdown (what ``wiki_lint`` parses) are also kept on disk in
``<wiki>/.cache/outlines.sqlite3`` keyed by the SHA-256 of the file's content: derived data, written
when a revision is published, rebuilt by parsing when missing or unreadable.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

SETTLE_SECONDS = 2.0
_MAX_ENTRIES = 50_000
_lock = threading.Lock()

Identity = tuple[Any, ...]


def identity(path: str | os.PathLike[str]) -> Identity | None:
    """A file's identity, or None when it changed too recently to be trusted (missing is an identity)."""
    try:
        st = os.lstat(path)
    except OSError:
        st = None
    return stat_identity(str(path), st)


def stat_identity(path: str, st: os.stat_result | None) -> Identity | None:
    """:func:`identity` from an ``lstat`` result already taken (None: the file is missing)."""
    if st is None:
        return ("missing", path)
    if max(st.st_mtime, st.st_ctime) > time.time() - SETTLE_SECONDS:
        return None
    return (path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def folder_identity(path: str | os.PathLike[str]) -> Identity | None:
    """Identity of a folder's top-level entries (a file added, replaced or edited there changes it)."""
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return None
    out: list[Any] = [str(path)]
    for entry in entries:
        ident = identity(entry.path)
        if ident is None:
            return None
        out.append(ident)
    return tuple(out)


class Memo:
    """A bounded map from a key to ``(identity, value)``; a lookup with another identity misses."""

    def __init__(self) -> None:
        self._items: OrderedDict[Any, tuple[Identity, Any]] = OrderedDict()

    def get(self, key: Any, ident: Identity | None) -> Any | None:
        if ident is None:
            return None
        with _lock:
            hit = self._items.get(key)
            if hit is None or hit[0] != ident:
                return None
            self._items.move_to_end(key)
            return hit[1]

    def put(self, key: Any, ident: Identity | None, value: Any) -> None:
        if ident is None:
            return
        with _lock:
            self._items[key] = (ident, value)
            self._items.move_to_end(key)
            while len(self._items) > _MAX_ENTRIES:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with _lock:
            self._items.clear()


RECORDS = Memo()  # verified revision records: (path, sha256) -> parsed record
MARKDOWN = Memo()  # verified Markdown files: (path, sha256) -> True
CLAIMS = Memo()  # claim checks: (session folder, claim id) -> ClaimCheck
RECORD_INPUTS = Memo()  # what validation needs from a record, by the record's SHA-256 (pure function)
FRESHNESS = Memo()  # source freshness of sessions over plain URL lists: session folder -> result
COPIES = Memo()  # SHA-256 of the wiki's copies of saved evidence: absolute path -> digest


def clear() -> None:
    for memo in (RECORDS, MARKDOWN, CLAIMS, RECORD_INPUTS, FRESHNESS, COPIES):
        memo.clear()


# --- outlines of rendered Markdown, on disk --------------------------------------------------------

Outline = tuple[list[str], list[tuple[str, int]]]  # heading anchors, links (href, line)


class Outlines:
    """The persistent outline cache of one wiki folder (failures only make it a miss)."""

    def __init__(self, root: Path) -> None:
        self.path = root / ".cache" / "outlines.sqlite3"
        self._conn: sqlite3.Connection | None = None
        self._memory: dict[str, Outline] = {}

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        if self._conn is None:
            if not create and not self.path.exists():
                return None
            try:
                self.path.parent.mkdir(mode=0o700, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=2.0, isolation_level=None)
                conn.execute("PRAGMA synchronous=OFF")
                conn.execute("CREATE TABLE IF NOT EXISTS outline (sha256 TEXT PRIMARY KEY, data TEXT NOT NULL)")
                self._conn = conn
            except (OSError, sqlite3.Error):
                self._drop()
                return None
        return self._conn

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        for suffix in ("", "-journal", "-wal", "-shm"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except OSError:
                pass

    def preload(self) -> None:
        conn = self._connect(create=False)
        if conn is None:
            return
        try:
            for sha, data in conn.execute("SELECT sha256, data FROM outline"):
                try:
                    anchors, links = json.loads(data)
                    self._memory[sha] = (anchors, [(h, n) for h, n in links])
                except (ValueError, TypeError):
                    continue
        except sqlite3.Error:
            self._drop()

    def get(self, sha: str) -> Outline | None:
        return self._memory.get(sha)

    def remember(self, items: dict[str, Outline]) -> None:
        """Known for this run only (:meth:`put` also stores them)."""
        self._memory.update(items)

    def put(self, items: dict[str, Outline]) -> None:
        self._memory.update(items)
        conn = self._connect(create=True)
        if conn is None:
            return
        rows = [(sha, json.dumps([a, links], ensure_ascii=False)) for sha, (a, links) in items.items()]
        try:
            conn.execute("BEGIN")  # one transaction, not one per row
            try:
                conn.executemany("INSERT OR REPLACE INTO outline VALUES (?, ?)", rows)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error:
            self._drop()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
