"""DDL of the bookmark index. One database holds every source; rows are scoped by ``source_id``."""

from __future__ import annotations

from bookmark_research.index.text import CHAR_TOKENIZER

SCHEMA_VERSION = 4  # 4: items.url_hash, sections.tree_digest, source_stats (and source_events);
#                    3: folder paths from folder-title indexes (1 and 2 indexed them per item)

#: Lifecycle events (restores) shown by ``history``. Added after version 3 without a version bump: an
#: older index gets the table from the first write that needs it (the DDL is idempotent).
EVENTS = """
CREATE TABLE IF NOT EXISTS source_events (
    source_id TEXT NOT NULL REFERENCES sources(source_id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    event TEXT NOT NULL,
    version_id TEXT,
    previous_version_id TEXT
);
"""

TABLES = """
CREATE TABLE sources (
    source_id TEXT PRIMARY KEY,
    mode TEXT NOT NULL,
    completeness TEXT NOT NULL,
    input_path TEXT,
    input_kind TEXT,
    package_path TEXT,
    version_id TEXT,
    state TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_sync TEXT,
    retained_missing_json TEXT NOT NULL DEFAULT '[]',
    record_json TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE source_aliases (
    source_id TEXT NOT NULL REFERENCES sources(source_id) ON DELETE CASCADE,
    input_path TEXT NOT NULL,
    PRIMARY KEY (source_id, input_path)
);
CREATE INDEX source_aliases_path ON source_aliases(input_path);
CREATE TABLE source_versions (
    source_id TEXT NOT NULL REFERENCES sources(source_id) ON DELETE CASCADE,
    version_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    snapshot_path TEXT NOT NULL,
    input_path TEXT,
    input_kind TEXT,
    completeness TEXT,
    file_count INTEGER NOT NULL,
    PRIMARY KEY (source_id, version_id)
);
CREATE TABLE files (
    source_id TEXT NOT NULL REFERENCES sources(source_id) ON DELETE CASCADE,
    file_path TEXT NOT NULL,
    kind TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    revision INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (source_id, file_path)
);
CREATE TABLE sections (
    source_id TEXT NOT NULL REFERENCES sources(source_id) ON DELETE CASCADE,
    section_id TEXT NOT NULL,
    file_path TEXT NOT NULL,
    section_type TEXT NOT NULL,
    kind TEXT NOT NULL,
    slot TEXT,
    label TEXT NOT NULL,
    title TEXT NOT NULL,
    description_md TEXT NOT NULL,
    is_anchor INTEGER NOT NULL,
    inherit_ref TEXT,
    inherit_path TEXT,
    canonical_id TEXT,
    raw_json TEXT NOT NULL,
    revision INTEGER NOT NULL DEFAULT 1,
    tree_digest TEXT,  -- digest of the file's tree text as indexed (canvas.jsonspan)
    PRIMARY KEY (source_id, section_id)
);
CREATE INDEX sections_file ON sections(source_id, file_path);
CREATE TABLE items (
    pk INTEGER PRIMARY KEY,
    source_id TEXT NOT NULL,
    section_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    parent_id TEXT,
    item_type TEXT NOT NULL,
    position INTEGER NOT NULL,
    preorder INTEGER NOT NULL,
    subtree_end INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    title TEXT NOT NULL,
    url TEXT NOT NULL,
    url_hash INTEGER,  -- text.url_hash(url): unique URLs are counted on integers
    note TEXT NOT NULL,
    note_color TEXT,
    tags_json TEXT NOT NULL,
    tag_text TEXT NOT NULL,
    path_json TEXT NOT NULL,
    folder_path TEXT NOT NULL,
    extra_json TEXT,
    metadata_json TEXT NOT NULL,
    synthetic INTEGER NOT NULL,
    content_hash INTEGER NOT NULL,
    revision INTEGER NOT NULL DEFAULT 1,
    UNIQUE (source_id, section_id, item_id),
    FOREIGN KEY (source_id, section_id) REFERENCES sections(source_id, section_id) ON DELETE CASCADE
);
CREATE INDEX items_tree ON items(source_id, section_id, preorder);
-- no index on item_id alone: folder and item lookups scan one source (milliseconds), imports stay fast
CREATE TABLE item_tags (
    item_pk INTEGER NOT NULL REFERENCES items(pk) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    color TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (item_pk, color, text)
);
CREATE INDEX item_tags_text ON item_tags(text);
CREATE INDEX item_tags_color ON item_tags(color);
CREATE TABLE nodes (
    source_id TEXT NOT NULL REFERENCES sources(source_id) ON DELETE CASCADE,
    node_id TEXT NOT NULL,
    canvas_path TEXT NOT NULL,
    node_type TEXT NOT NULL,
    position INTEGER NOT NULL,
    file_ref TEXT,
    file_candidates_json TEXT NOT NULL DEFAULT '[]',
    file_path TEXT,
    section_id TEXT,
    label TEXT,
    text TEXT,
    color TEXT,
    x REAL NOT NULL,
    y REAL NOT NULL,
    width REAL NOT NULL,
    height REAL NOT NULL,
    raw_json TEXT NOT NULL,
    revision INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (source_id, node_id)
);
CREATE TABLE edges (
    source_id TEXT NOT NULL REFERENCES sources(source_id) ON DELETE CASCADE,
    edge_id TEXT NOT NULL,
    canvas_path TEXT NOT NULL,
    position INTEGER NOT NULL,
    from_node TEXT NOT NULL,
    to_node TEXT NOT NULL,
    from_end TEXT NOT NULL,
    to_end TEXT NOT NULL,
    label TEXT,
    raw_json TEXT NOT NULL,
    revision INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (source_id, edge_id)
);
-- Counts of a source as of its last sync (index.status.store_counts); rows change only through a sync.
CREATE TABLE source_stats (
    source_id TEXT PRIMARY KEY REFERENCES sources(source_id) ON DELETE CASCADE,
    counts_json TEXT NOT NULL
);
CREATE TABLE memberships (
    source_id TEXT NOT NULL REFERENCES sources(source_id) ON DELETE CASCADE,
    group_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    PRIMARY KEY (source_id, group_id, node_id)
);
"""

# Full-text indexes over the items:
# - items_fts: trigram over title, URL, note and tag text (ranked substring search, terms of 3+ chars);
# - folders_fts: trigram over folder titles only. A term matches an item's folder path exactly when it
#   matches the title of one of its folders (path parts are joined with " / " and terms hold no spaces),
#   so the path is answered from folder titles and subtree ranges instead of being indexed again for
#   every bookmark: that was 40% of the trigram index;
# - items_chars / folders_chars: one token per CJK (non-ASCII) character, for 1-2 character terms, over
#   the same fields and over folder titles; contentless, their text derived by ``br_chars`` (registered
#   on every connection).
# Inserts are indexed in bulk by ``index_new_items`` (one INSERT … SELECT is several times faster than a
# per-row trigger); updates and deletes, which are few, are kept in step by triggers.
FTS = f"""
CREATE VIRTUAL TABLE items_fts USING fts5(
    title, url, note, tag_text, content='items', content_rowid='pk', tokenize='trigram'
);
CREATE VIRTUAL TABLE folders_fts USING fts5(title, content='items', content_rowid='pk', tokenize='trigram');
CREATE VIRTUAL TABLE items_chars USING fts5(chars, content='', tokenize="{CHAR_TOKENIZER}");
CREATE VIRTUAL TABLE folders_chars USING fts5(chars, content='', tokenize="{CHAR_TOKENIZER}");
CREATE TRIGGER items_ad AFTER DELETE ON items BEGIN
    INSERT INTO items_fts(items_fts, rowid, title, url, note, tag_text)
        VALUES ('delete', old.pk, old.title, old.url, old.note, old.tag_text);
    INSERT INTO folders_fts(folders_fts, rowid, title)
        SELECT 'delete', old.pk, old.title WHERE old.item_type = 'folder' AND old.title <> '';
    INSERT INTO folders_chars(folders_chars, rowid, chars)
        SELECT 'delete', old.pk, c FROM (SELECT br_chars(old.title) AS c) WHERE old.item_type = 'folder' AND c <> '';
    INSERT INTO items_chars(items_chars, rowid, chars)
        SELECT 'delete', old.pk, c FROM (SELECT br_chars(old.title, old.url, old.note, old.tag_text) AS c)
        WHERE c <> '';
END;
CREATE TRIGGER items_au AFTER UPDATE OF title, url, note, tag_text, folder_path, item_type ON items BEGIN
    INSERT INTO items_fts(items_fts, rowid, title, url, note, tag_text)
        VALUES ('delete', old.pk, old.title, old.url, old.note, old.tag_text);
    INSERT INTO items_fts(rowid, title, url, note, tag_text)
        VALUES (new.pk, new.title, new.url, new.note, new.tag_text);
    INSERT INTO folders_fts(folders_fts, rowid, title)
        SELECT 'delete', old.pk, old.title WHERE old.item_type = 'folder' AND old.title <> '';
    INSERT INTO folders_fts(rowid, title)
        SELECT new.pk, new.title WHERE new.item_type = 'folder' AND new.title <> '';
    INSERT INTO folders_chars(folders_chars, rowid, chars)
        SELECT 'delete', old.pk, c FROM (SELECT br_chars(old.title) AS c) WHERE old.item_type = 'folder' AND c <> '';
    INSERT INTO folders_chars(rowid, chars)
        SELECT new.pk, c FROM (SELECT br_chars(new.title) AS c) WHERE new.item_type = 'folder' AND c <> '';
    INSERT INTO items_chars(items_chars, rowid, chars)
        SELECT 'delete', old.pk, c FROM (SELECT br_chars(old.title, old.url, old.note, old.tag_text) AS c)
        WHERE c <> '';
    INSERT INTO items_chars(rowid, chars)
        SELECT new.pk, c FROM (SELECT br_chars(new.title, new.url, new.note, new.tag_text) AS c)
        WHERE c <> '';
END;
"""


def index_new_items(conn, first_pk: int, last_pk: int, chars: list[tuple[int, str]],  # type: ignore[no-untyped-def]
                    folder_chars: list[tuple[int, str]]) -> None:
    """Add items with ``first_pk <= pk <= last_pk`` to the trigram indexes, and the character texts the
    caller computed with :func:`char_text` (non-empty only) to the character indexes."""
    conn.execute(
        "INSERT INTO items_fts(rowid, title, url, note, tag_text) "
        "SELECT pk, title, url, note, tag_text FROM items WHERE pk BETWEEN ? AND ?", (first_pk, last_pk))
    conn.execute(
        "INSERT INTO folders_fts(rowid, title) SELECT pk, title FROM items "
        "WHERE pk BETWEEN ? AND ? AND item_type = 'folder' AND title <> ''", (first_pk, last_pk))
    if chars:
        conn.executemany("INSERT INTO items_chars(rowid, chars) VALUES (?, ?)", chars)
    if folder_chars:
        conn.executemany("INSERT INTO folders_chars(rowid, chars) VALUES (?, ?)", folder_chars)


FTS_TABLES = ("items_fts", "folders_fts", "items_chars", "folders_chars")


def tune_fts(conn) -> None:  # type: ignore[no-untyped-def]
    """Bulk-import settings of the full-text tables (kept in their config): merge segments less eagerly
    and buffer 8 MiB of postings before writing a segment. An import of 100k bookmarks indexes about 25%
    faster each; queries read fewer segments."""
    for table in FTS_TABLES:
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('automerge', 16)")
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('hashsize', 8388608)")


def rebuild_fts(conn, fts: str = FTS) -> None:  # type: ignore[no-untyped-def]
    """Recreate every full-text index and trigger (``fts``: the DDL in use) from the items table."""
    for name in ("items_ai", "items_ad", "items_au"):
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    for table in FTS_TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    for statement in statements(fts):
        conn.execute(statement)
    conn.execute("INSERT INTO items_fts(items_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO folders_fts(rowid, title) SELECT pk, title FROM items "
                 "WHERE item_type = 'folder' AND title <> ''")
    conn.execute("INSERT INTO items_chars(rowid, chars) SELECT pk, c FROM (SELECT pk, br_chars(title, url, note, "
                 "tag_text) AS c FROM items) WHERE c <> ''")
    conn.execute("INSERT INTO folders_chars(rowid, chars) SELECT pk, c FROM (SELECT pk, br_chars(title) AS c "
                 "FROM items WHERE item_type = 'folder') WHERE c <> ''")


def statements(script: str):  # type: ignore[no-untyped-def]
    """Split a DDL script into statements (trigger bodies included)."""
    import sqlite3

    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
