"""Open the index database: WAL, busy timeout, foreign keys, schema creation and checks."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from bookmark_research.canvas.layout import PROTOCOL_FOLDERS
from bookmark_research.errors import StorageError
from bookmark_research.index import schema
from bookmark_research.index.text import CHAR_TOKENIZER, char_text

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


def _inside_package(path: Path) -> Path | None:
    for folder in path.parents:
        try:
            if any((folder / name).is_dir() for name in PROTOCOL_FOLDERS) or any(folder.glob("*.canvas")):
                return folder
        except OSError:
            continue
    return None


def _configure(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA cache_size=-65536")  # 64 MiB: large imports stop spilling pages mid-transaction
    conn.create_function("br_chars", 5, char_text, deterministic=True)


def connect(db_path: Path, *, create: bool = True) -> sqlite3.Connection | None:
    """Open (and if needed create) the index; ``None`` when ``create`` is false and it does not exist."""
    if not db_path.exists():
        if not create:
            return None
        package = _inside_package(db_path)
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
        elif version == 1:
            _upgrade_from_1(conn)
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


def _create_schema(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    fts = schema.FTS
    if not sqlite_supports("trigram"):
        fts = fts.replace("tokenize='trigram'", "tokenize='unicode61'")
    with transaction(conn):
        if conn.execute("PRAGMA user_version").fetchone()[0] != 0:
            return  # another process created it while we waited for the lock
        for statement in _statements(schema.TABLES + fts):
            conn.execute(statement)
        # Merge FTS segments less eagerly: bulk imports are ~25% faster, queries are unaffected at this scale.
        conn.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('automerge', 16)")
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('trigram', ?)", ("1" if "trigram" in fts else "0",))
        conn.execute(f"PRAGMA user_version={schema.SCHEMA_VERSION}")


def _upgrade_from_1(conn: sqlite3.Connection) -> None:
    """Version 1 indexed folder paths per item; rebuild the trigram indexes without them (data is kept)."""
    with transaction(conn):
        if conn.execute("PRAGMA user_version").fetchone()[0] != 1:
            return
        for name in ("items_ai", "items_ad", "items_au"):
            conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute("DROP TABLE IF EXISTS items_fts")
        fts = schema.FTS.replace(
            f'CREATE VIRTUAL TABLE items_chars USING fts5(chars, content=\'\', tokenize="{CHAR_TOKENIZER}");\n', "")
        for statement in _statements(fts):
            conn.execute(statement)
        conn.execute("INSERT INTO items_fts(items_fts) VALUES ('rebuild')")
        conn.execute("INSERT INTO folders_fts(rowid, title) SELECT pk, title FROM items "
                     "WHERE item_type = 'folder' AND title <> ''")
        conn.execute(f"PRAGMA user_version={schema.SCHEMA_VERSION}")


def _statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""


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
