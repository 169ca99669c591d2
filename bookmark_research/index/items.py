"""Write one section's items: insert new, update changed (revision + 1), delete missing.

Item identity is ``(source_id, section_id, item_id)``; its integer ``pk`` never changes while that
key persists. Only content changes bump ``revision``; a shifted position or preorder is updated in
place without touching the full-text indexes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bookmark_research.canvas.sections import ItemRow, ParsedSection, identity_fields, unknown_colours
from bookmark_research.canvas.strictjson import dumps
from bookmark_research.index.schema import index_new_items
from bookmark_research.index.text import char_text, url_hash

_COLUMNS = (
    "pk, source_id, section_id, item_id, parent_id, item_type, position, preorder, subtree_end, depth, title, url, "
    "url_hash, note, note_color, tags_json, tag_text, path_json, folder_path, extra_json, metadata_json, "
    "synthetic, content_hash, revision"
)
_INSERT = f"INSERT INTO items ({_COLUMNS}) VALUES ({', '.join('?' * len(_COLUMNS.split(', ')))})"
_UPDATE = (
    "UPDATE items SET parent_id=?, item_type=?, position=?, preorder=?, subtree_end=?, depth=?, title=?, url=?, "
    "url_hash=?, note=?, note_color=?, tags_json=?, tag_text=?, path_json=?, folder_path=?, extra_json=?, "
    "metadata_json=?, synthetic=?, content_hash=?, revision=revision+1 WHERE pk=?"
)
_REORDER = "UPDATE items SET position=?, preorder=?, subtree_end=?, depth=? WHERE pk=?"


@dataclass
class ItemCounts:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0


class _PathCache:
    """Siblings share their path list: serialise it (JSON and ``a / b`` text) once."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[list[str], str, str]] = {}

    def __call__(self, value: list[str]) -> tuple[str, str]:
        hit = self._cache.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1], hit[2]
        json_text, folder_path = dumps(value), " / ".join(value)
        self._cache[id(value)] = (value, json_text, folder_path)
        return json_text, folder_path


def _extra_json(extra: dict[str, Any]) -> str | None:
    """``dumps(extra)``, with a shortcut for the usual single integer field (a browser's ``dateAdded``)."""
    if not extra:
        return None
    if len(extra) == 1:
        ((key, value),) = extra.items()
        if type(value) is int and key.isascii() and key.isidentifier():
            return f'{{"{key}":{value}}}'
    return dumps(extra)


def _digest(row: ItemRow, paths: _PathCache) -> tuple[int, str, str, str, str | None, str]:
    """The row's content hash and the JSON texts it covers (what tells a changed row from an unchanged one)."""
    tags_json = dumps(row.tags) if row.tags else "[]"
    extra_json = _extra_json(row.extra)
    metadata_json = dumps(row.metadata) if row.metadata else "{}"
    p_json, folder_path = paths(row.path)
    content = "\x1f".join((
        row.parent_id if row.parent_id is not None else "\x1e", row.item_type, row.title, row.url, row.note,
        row.note_color or "\x1e", tags_json, p_json, extra_json or "\x1e", metadata_json, "1" if row.synthetic else "0",
    ))
    digest = int.from_bytes(hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                            "big", signed=True)
    return digest, tags_json, p_json, folder_path, extra_json, metadata_json


def _values(row: ItemRow, digest: tuple[int, str, str, str, str | None, str]) -> tuple:
    """Every stored column of the row (from its :func:`_digest`), in ``_UPDATE`` order."""
    content_hash, tags_json, p_json, folder_path, extra_json, metadata_json = digest
    tag_text = "\n".join(str(t.get("text", "")) for t in row.tags) if row.tags else ""
    return (row.parent_id, row.item_type, row.position, row.preorder, row.subtree_end, row.depth, row.title, row.url,
            url_hash(row.url), row.note, row.note_color, tags_json, tag_text, p_json, folder_path, extra_json,
            metadata_json, 1 if row.synthetic else 0, content_hash)


class FtsWorker:
    """Writes and indexes chunks of rows on a helper thread while the caller builds the next chunk.

    SQLite runs statements without holding the GIL, so storing and full-text indexing a chunk overlap
    with the Python work of walking and hashing the next rows. The connection is used by one thread
    at a time: every statement the caller runs itself is preceded by :meth:`wait`.

    Inserted rows are indexed in batches of at least :data:`CHUNK` rows, across sections: FTS5
    writes a segment per indexing statement, and thousands of small ones (a package of many small
    sections) would make the index merge over and over.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bookmark-research-fts")
        self.pending: Future[None] | None = None
        self.ranges: list[tuple[int, int]] = []  # inserted, not yet indexed (helper thread only)
        self.chars: list[tuple[int, str]] = []
        self.folder_chars: list[tuple[int, str]] = []
        self.unindexed = 0

    def wait(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            pending.result()

    def submit(self, work: Callable[[sqlite3.Connection], None]) -> None:
        """Run ``work(conn)`` on the helper thread once the previous chunk is done."""
        self.wait()
        self.pending = self.pool.submit(work, self.conn)

    def store(self, retag: list[tuple[int]], updates: list[tuple], reorders: list[tuple], inserts: list[tuple],
              tag_rows: list[tuple], chars: list[tuple[int, str]], folder_chars: list[tuple[int, str]]) -> None:
        """Write one chunk of rows on the helper thread; inserted rows join the next index batch
        (updated rows are re-indexed by their trigger)."""
        def work(conn: sqlite3.Connection) -> None:
            if retag:
                conn.executemany("DELETE FROM item_tags WHERE item_pk=?", retag)
            if updates:
                conn.executemany(_UPDATE, updates)
            if reorders:
                conn.executemany(_REORDER, reorders)
            if inserts:
                conn.executemany(_INSERT, inserts)
                self.ranges.append((inserts[0][0], inserts[-1][0]))
                self.chars += chars
                self.folder_chars += folder_chars
                self.unindexed += len(inserts)
            if tag_rows:
                conn.executemany("INSERT OR IGNORE INTO item_tags (item_pk, position, color, text) VALUES (?, ?, ?, ?)",
                                 tag_rows)
            if self.unindexed >= CHUNK:
                self._index(conn)

        self.submit(work)

    def _index(self, conn: sqlite3.Connection) -> None:
        merged: list[list[int]] = []
        for first, last in self.ranges:
            if merged and first == merged[-1][1] + 1:
                merged[-1][1] = last
            else:
                merged.append([first, last])
        for n, (first, last) in enumerate(merged):
            last_batch = n == len(merged) - 1
            index_new_items(conn, first, last, self.chars if last_batch else [], self.folder_chars if last_batch else [])
        self.ranges, self.chars, self.folder_chars, self.unindexed = [], [], [], 0

    def finish(self) -> None:
        """Index the rows still waiting and wait for everything (call before using the index)."""
        self.submit(self._index)
        self.wait()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self.pool.shutdown()


CHUNK = 4096


def write_items(conn: sqlite3.Connection, source_id: str, section: ParsedSection, fts: FtsWorker) -> ItemCounts:
    """Diff a section's rows, as its walk yields them, against its stored items and apply the difference.

    Rows are written in chunks while the walk goes on (and indexed on the helper thread meanwhile),
    so no more than a chunk of them is held; stored rows the walk did not yield are deleted last.
    """
    counts = ItemCounts()
    fts.wait()
    existing = {
        item_id: (pk, digest, pos, pre, end, depth)
        for item_id, pk, digest, pos, pre, end, depth in conn.execute(
            "SELECT item_id, pk, content_hash, position, preorder, subtree_end, depth FROM items "
            "WHERE source_id=? AND section_id=?",
            (source_id, section.section_id),
        )
    }
    next_pk = conn.execute("SELECT COALESCE(MAX(pk), 0) FROM items").fetchone()[0] + 1
    paths = _PathCache()
    sid = section.section_id
    pending: list[ItemRow] = []

    def flush() -> None:
        nonlocal next_pk
        inserts, updates, reorders, tag_rows, retag, chars, folder_chars = [], [], [], [], [], [], []
        for row in pending:
            digest = _digest(row, paths)
            old = existing.pop(row.item_id, None)
            if old is None:
                pk = next_pk
                next_pk += 1
                values = _values(row, digest)
                inserts.append((pk, source_id, sid, row.item_id, *values, 1))
                text = char_text(row.title, row.url, row.note, values[12])  # 12: tag_text
                if text:
                    chars.append((pk, text))
                if row.item_type == "folder" and (text := char_text(row.title)):
                    folder_chars.append((pk, text))
            else:
                pk = old[0]
                if old[1] != digest[0]:
                    updates.append((*_values(row, digest), pk))
                    retag.append((pk,))
                elif old[2:] != (row.position, row.preorder, row.subtree_end, row.depth):
                    reorders.append((row.position, row.preorder, row.subtree_end, row.depth, pk))
                    continue
                else:
                    continue
            for position, tag in enumerate(row.tags):
                tag_rows.append((pk, position, str(tag.get("color", "")), str(tag.get("text", ""))))
        pending.clear()
        if retag or updates or reorders or inserts:
            fts.store(retag, updates, reorders, inserts, tag_rows, chars, folder_chars)
        counts.inserted += len(inserts)
        counts.updated += len(updates)

    def take(row: ItemRow) -> None:
        pending.append(row)
        if len(pending) >= CHUNK:
            flush()

    section.rows(take)
    flush()
    gone = [(old[0],) for old in existing.values()]
    if gone:
        fts.wait()
        conn.executemany("DELETE FROM items WHERE pk=?", gone)
    counts.deleted = len(gone)
    return counts


def identity_changes(conn: sqlite3.Connection, source_id: str, section: ParsedSection) -> set[str]:
    """The syncIds whose identity-map entry differs from what the section's items store (their metadata)."""
    entries = section.identity or {}
    stored = dict(conn.execute("SELECT item_id, metadata_json FROM items WHERE source_id=? AND section_id=? "
                               "AND metadata_json <> '{}'", (source_id, section.section_id)))
    changed = {item_id for item_id, meta in stored.items() if item_id not in entries or dumps(entries[item_id]) != meta}
    return changed | (entries.keys() - stored.keys())


def write_identity(conn: sqlite3.Connection, source_id: str, section: ParsedSection, changed: set[str]) -> ItemCounts:
    """Apply identity-map changes to a permanent section whose tree is exactly as indexed.

    Only the items whose entry changed are rewritten (same content hash rule, same revisions as a
    full walk); the walk's warnings about unknown tag colours are raised again, in tree order.
    """
    counts = ItemCounts()
    sid = section.section_id
    identity = section.identity or {}

    def stored(ids: list[str], columns: str) -> list[tuple]:
        return conn.execute(f"SELECT {columns} FROM items WHERE source_id=? AND section_id=? AND item_id IN "
                            "(SELECT value FROM json_each(?)) ORDER BY preorder", (source_id, sid, json.dumps(ids))).fetchall()

    for (item_id,) in stored([k for k, e in identity.items() if unknown_colours(e)], "item_id"):
        identity_fields(section, item_id, section.warnings)
    paths = _PathCache()
    updates, retag, tag_rows = [], [], []
    for (pk, old_digest, item_id, parent_id, item_type, position, preorder, subtree_end, depth, title, url, path_json,
         extra_json, synthetic) in stored(sorted(changed), "pk, content_hash, item_id, parent_id, item_type, position, "
                                          "preorder, subtree_end, depth, title, url, path_json, extra_json, synthetic"):
        metadata, tags, note, note_color = identity_fields(section, item_id, [])
        row = ItemRow(item_id, parent_id, item_type, position, preorder, depth, title, url, note, note_color, tags,
                      json.loads(path_json), json.loads(extra_json) if extra_json else {}, metadata, bool(synthetic),
                      subtree_end)
        digest = _digest(row, paths)
        if digest[0] != old_digest:
            updates.append((*_values(row, digest), pk))
            retag.append((pk,))
            tag_rows.extend((pk, n, str(t.get("color", "")), str(t.get("text", ""))) for n, t in enumerate(tags))
    if updates:
        conn.executemany("DELETE FROM item_tags WHERE item_pk=?", retag)
        conn.executemany(_UPDATE, updates)
        conn.executemany("INSERT OR IGNORE INTO item_tags (item_pk, position, color, text) VALUES (?, ?, ?, ?)",
                         tag_rows)
    counts.updated = len(updates)
    return counts
