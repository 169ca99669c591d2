"""Open the index database: WAL, busy timeout, foreign keys, schema creation and checks."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from bookmark_research.paths import enclosing_package
from bookmark_research.errors import StorageError
from bookmark_research.index import schema
from bookmark_research.index.text import char_text, url_hash

BUSY_TIMEOUT_MS = 15_000


def sqlite_supports(tokenizer: str) -> bool:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(a, tokenize={tokenizer!r})")
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _lower(text: str | None) -> str | None:
    return text.lower() if text is not None else None


def _configure(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA cache_size=-8192")  # 8 MiB: bounded memory (64 MiB cost ~50 MB of RSS, no measurable time)
    conn.execute("PRAGMA temp_store=MEMORY")  # sorts and DISTINCT counts in memory (a 1M source: 2.5 s -> 1.2 s)
    conn.create_function("br_chars", -1, char_text, deterministic=True)
    conn.create_function("br_lower", 1, _lower, deterministic=True)


def connect(db_path: Path, *, create: bool = True) -> sqlite3.Connection | None:
    """Open (and if needed create) the index; ``None`` when ``create`` is false and it does not exist."""
    if not db_path.exists():
        if not create:
            return None
        package = enclosing_package(db_path.parent)
        if package is not None:
            raise StorageError(
                f"{db_path}: the database must be outside imported package directories (found package at {package}); "
                "set BOOKMARK_RESEARCH_DATA_DIR or --data-dir elsewhere"
            )
        try:
            db_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(
                f"{db_path.parent}: cannot create the data directory ({exc.strerror}); set BOOKMARK_RESEARCH_DATA_DIR "
                "or --data-dir to a writable folder"
            ) from None
    try:
        conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
        _configure(conn)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            _create_schema(conn)
        elif version in (1, 2, 3):
            _upgrade(conn, version)
        elif version != schema.SCHEMA_VERSION:
            conn.close()
            raise StorageError(f"{db_path}: unsupported index schema version {version} (expected {schema.SCHEMA_VERSION})")
    except sqlite3.OperationalError as exc:
        raise StorageError(
            f"{db_path}: cannot open the index ({exc}); check permissions or set BOOKMARK_RESEARCH_DATA_DIR; "
            "run 'bookmark-research doctor'"
        ) from None
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"{db_path}: not a bookmark-research index ({exc})") from None
    return conn


def _fts_script() -> str:
    """The full-text DDL, with word tokens where this SQLite has no trigram tokenizer."""
    return schema.FTS if sqlite_supports("trigram") else schema.FTS.replace("tokenize='trigram'", "tokenize='unicode61'")


def _create_schema(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    fts = _fts_script()
    with transaction(conn):
        if conn.execute("PRAGMA user_version").fetchone()[0] != 0:
            return  # another process created it while we waited for the lock
        for statement in schema.statements(schema.TABLES + schema.EVENTS + fts):
            conn.execute(statement)
        schema.tune_fts(conn)
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('trigram', ?)", ("1" if "trigram" in fts else "0",))
        conn.execute(f"PRAGMA user_version={schema.SCHEMA_VERSION}")


def _upgrade(conn: sqlite3.Connection, version: int) -> None:
    """Bring an older index up to date in place (the data is kept).

    1 and 2 indexed folder paths per item: the full-text indexes are rebuilt. Before 4, items had no
    ``url_hash`` (added and computed), sections no ``tree_digest`` (the next sync walks every tree) and there
    was no ``source_stats`` (counts are computed until a sync).
    """
    with transaction(conn):
        if conn.execute("PRAGMA user_version").fetchone()[0] != version:
            return  # another process upgraded it meanwhile
        if version < 3:
            schema.rebuild_fts(conn, _fts_script())
        schema.tune_fts(conn)
        for statement in schema.statements(schema.EVENTS):
            conn.execute(statement)
        conn.execute("CREATE TABLE IF NOT EXISTS source_stats (source_id TEXT PRIMARY KEY REFERENCES "
                     "sources(source_id) ON DELETE CASCADE, counts_json TEXT NOT NULL)")
        if "tree_digest" not in {row[1] for row in conn.execute("PRAGMA table_info(sections)")}:
            conn.execute("ALTER TABLE sections ADD COLUMN tree_digest TEXT")
        if "url_hash" not in {row[1] for row in conn.execute("PRAGMA table_info(items)")}:
            conn.execute("ALTER TABLE items ADD COLUMN url_hash INTEGER")
        conn.create_function("br_url_hash", 1, url_hash, deterministic=True)
        conn.execute("UPDATE items SET url_hash = br_url_hash(url)")
        conn.execute(f"PRAGMA user_version={schema.SCHEMA_VERSION}")


def has_trigram(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT value FROM meta WHERE key='trigram'").fetchone()
    return bool(row and row[0] == "1")


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction (``BEGIN IMMEDIATE``): everything or nothing."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


@contextlib.contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A consistent read view across several queries (WAL readers never block the writer)."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")
